// The reference interpreter as a Backend: host buffers, and "compiling" keeps the routine.
#include <cstdint>
#include <vector>

#include "backends/host_memory.h"
#include "cannl/backends/backend.h"
#include "cannl/interp/interpreter.h"

namespace cannl::backends {

namespace {

class InterpreterExecutable final : public Executable {
 public:
  explicit InterpreterExecutable(CompileRequest request) : request_(std::move(request)) {
    // Nodes the routine touches that are not parameters are its local arrays (the optimizer
    // placed them Local): like the C backend's function-local arrays, zeroed at every run.
    for (const auto& node : ir::nodes_of(request_.routine.body)) {
      bool is_param = false;
      for (const auto& p : request_.params) is_param = is_param || p->id == node->id;
      if (!is_param) locals_.push_back(node);
    }
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const auto pointers = host_pointers(request_, buffers, static_values);
    interp::Buffers views;
    for (std::size_t k = 0; k < pointers.size(); ++k) {
      views.emplace(request_.params[k]->id, std::span<std::byte>(pointers[k], buffers[k]->size()));
    }
    std::vector<std::vector<std::uint64_t>> scratch;  // 8-byte aligned, zeroed
    scratch.reserve(locals_.size());
    for (const auto& node : locals_) {
      const std::size_t bytes = node->size_in_bytes();
      scratch.emplace_back((bytes + 7) / 8, 0);
      views.emplace(node->id, std::span<std::byte>(reinterpret_cast<std::byte*>(scratch.back().data()), bytes));
    }
    interp::run(request_.routine, views, static_values);
  }

  const std::string& source() const override { return source_; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }

 private:
  CompileRequest request_;
  std::vector<ir::NodeRef> locals_;
  std::string source_;  // the interpreter generates none
};

class InterpreterBackend final : public Backend {
 public:
  std::string_view name() const override { return "interpreter"; }
  // The reference semantics run every annotation as written: nothing to lower, nothing to tile.
  ir::Target target() const override {
    ir::Target t;
    t.backend = "interpreter";
    return t;
  }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    return std::make_unique<CpuBuffer>(bytes);
  }
  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    return std::make_unique<InterpreterExecutable>(request);
  }
};

}  // namespace

std::shared_ptr<Backend> make_interpreter_backend() { return std::make_shared<InterpreterBackend>(); }

}  // namespace cannl::backends
