// The reference interpreter as a Backend: host buffers, and "compiling" keeps the routine.
#include "backends/host_memory.h"
#include "cannl/backends/backend.h"
#include "cannl/interp/interpreter.h"

namespace cannl::backends {

namespace {

class InterpreterExecutable final : public Executable {
 public:
  explicit InterpreterExecutable(CompileRequest request) : request_(std::move(request)) {}

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const auto pointers = host_pointers(request_, buffers, static_values);
    interp::Buffers views;
    for (std::size_t k = 0; k < pointers.size(); ++k) {
      views.emplace(request_.params[k]->id, std::span<std::byte>(pointers[k], buffers[k]->size()));
    }
    interp::run(request_.routine, views, static_values);
  }

  const std::string& source() const override { return source_; }

 private:
  CompileRequest request_;
  std::string source_;  // the interpreter generates none
};

class InterpreterBackend final : public Backend {
 public:
  std::string_view name() const override { return "interpreter"; }
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
