// The reference interpreter as a Backend: host buffers, and "compiling" keeps the routine.
#include <cstdint>
#include <string>

#include "backends/host_memory.h"
#include "backends/interpreter_memory.h"
#include "cannl/backends/backend.h"
#include "cannl/interp/interpreter.h"

namespace cannl::backends {

namespace {

class InterpreterExecutable final : public Executable {
 public:
  explicit InterpreterExecutable(CompileRequest request)
      : request_(std::move(request)), memory_(request_.routine, request_.params) {}

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const InterpreterMemory::Run memory = memory_.views(request_, buffers, static_values);
    interp::run(request_.routine, memory.views, static_values);
  }

  const std::string& source() const override { return source_; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }

 private:
  CompileRequest request_;
  InterpreterMemory memory_;
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
