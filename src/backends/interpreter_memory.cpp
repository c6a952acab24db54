// The interpreter's memory for runs of one routine (see interpreter_memory.h).
#include "backends/interpreter_memory.h"

#include <algorithm>

#include "backends/host_memory.h"

namespace cannl::backends {

InterpreterMemory::InterpreterMemory(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params) {
  for (const auto& node : ir::nodes_of(routine.body)) {
    const bool is_param = std::any_of(params.begin(), params.end(), [&](const ir::NodeRef& p) { return p->id == node->id; });
    if (!is_param) locals_.push_back(node);
  }
}

InterpreterMemory::Run InterpreterMemory::views(const CompileRequest& request, std::span<Buffer* const> buffers,
                                                std::span<const std::int64_t> static_values) const {
  const auto pointers = host_pointers(request, buffers, static_values);
  Run out;
  for (std::size_t k = 0; k < pointers.size(); ++k)
    out.views.emplace(request.params[k]->id, std::span<std::byte>(pointers[k], buffers[k]->size()));
  out.scratch.reserve(locals_.size());
  for (const auto& node : locals_) {
    const std::size_t bytes = node->size_in_bytes();
    out.scratch.emplace_back((bytes + 7) / 8, 0);
    out.views.emplace(node->id, std::span<std::byte>(reinterpret_cast<std::byte*>(out.scratch.back().data()), bytes));
  }
  return out;
}

}  // namespace cannl::backends
