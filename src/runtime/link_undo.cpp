#include "runtime/link_undo.h"

#include <algorithm>

namespace cannl::runtime {

namespace {

template <typename Map>
auto optional_entry(const Map& map, int id) -> std::optional<typename Map::mapped_type> {
  const auto it = map.find(id);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

template <typename Map>
void put_back(Map& map, int id, const std::optional<typename Map::mapped_type>& value) {
  if (value) map.insert_or_assign(id, *value);
  else map.erase(id);
}

}  // namespace

LinkUndo::LinkUndo(ContextState& state, std::initializer_list<std::span<const ir::NodeRef>> node_lists)
    : state_(state) {
  for (const auto& list : node_lists) {
    for (const ir::NodeRef& node : list) {
      const int id = node->id;
      if (std::any_of(nodes_.begin(), nodes_.end(), [id](const Before& b) { return b.node->id == id; })) continue;
      nodes_.push_back({node, state.buffers.contains(id), state.initialized.contains(id),
                        state.written_from_outside.contains(id), optional_entry(state.write_counts, id),
                        optional_entry(state.queued_writes, id)});
    }
  }
}

void LinkUndo::roll_back() {
  for (const Before& before : nodes_) {
    const int id = before.node->id;
    if (!before.had_buffer) {
      const auto it = state_.buffers.find(id);
      if (it != state_.buffers.end()) {
        state_.buffer_bytes -= static_cast<std::int64_t>(it->second.buffer->size());
        state_.buffers.erase(it);
      }
    }
    if (!before.initialized) restore_marks(before);
  }
}

// Only a node that held no value can have been marked by linking (its host-init upload).
void LinkUndo::restore_marks(const Before& before) {
  const int id = before.node->id;
  state_.initialized.erase(id);
  if (before.written_from_outside) state_.written_from_outside.insert(id);
  else state_.written_from_outside.erase(id);
  put_back(state_.write_counts, id, before.write_count);
  put_back(state_.queued_writes, id, before.queued_write);
}

}  // namespace cannl::runtime
