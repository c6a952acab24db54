// Context::twin and Context::backend: what the tuner needs of a context to time candidates
// without touching its data.
#include <vector>

#include "cannl/runtime/context.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

const backends::Backend& Context::backend() const { return *state_->backend; }

Context Context::twin() const {
  // A device's queued routines (or a GPU stream's kernels) may still write its buffers.
  state_->wait_for_all_work();
  Context copy(state_->backend);
  ContextState& to = *copy.state_;
  std::vector<std::byte> bytes;
  for (const auto& [id, held] : state_->buffers) {
    bytes.resize(held.buffer->size());
    held.buffer->read(bytes);
    to.ensure_buffer(held.node).write(bytes);
  }
  to.initialized = state_->initialized;
  // The optimizer keeps every node the lineage knows (compile.cpp, pass_context): the twin knows
  // the same ones, but no routine wrote them there, so nothing it compiles depends on another.
  for (const auto& [id, history] : state_->history) to.history.try_emplace(id);
  return copy;
}

}  // namespace cannl::runtime
