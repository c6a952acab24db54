#pragma once
// The interpreter's memory for runs of one routine (private to src/backends): views of the
// parameters' host buffers, and zeroed scratch for the nodes the routine touches that are not
// parameters (the local arrays the optimizer placed, zeroed at every run like the C backend's
// function-local arrays). Shared by the interpreter and gpu-emulator backends.
//
//   InterpreterMemory memory(routine, params);
//   const InterpreterMemory::Run run = memory.views(request, buffers, statics);
//   interp::run(routine, run.views, statics);
#include <cstdint>
#include <span>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/interp/interpreter.h"

namespace cannl::backends {

class InterpreterMemory {
 public:
  InterpreterMemory(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params);
  /// One run's memory: the views, and the zeroed locals' storage they point into.
  struct Run {
    interp::Buffers views;
    std::vector<std::vector<std::uint64_t>> scratch;  // 8-byte aligned
  };
  /// Views of `buffers` (the request's parameters, in order) and of fresh zeroed locals.
  Run views(const CompileRequest& request, std::span<Buffer* const> buffers,
            std::span<const std::int64_t> static_values) const;

 private:
  std::vector<ir::NodeRef> locals_;
};

}  // namespace cannl::backends
