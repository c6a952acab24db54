// Privatizing windowed reductions (see window_nest.h).
#include "schedule/window_nest.h"

#include <algorithm>

#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

std::optional<Privatize> plan_window_privatize(const ir::For& top, std::int64_t max_window) {
  const auto nest = serial_store_nest(top, 2);
  if (!nest || !accumulation_op(nest->store->node, nest->store->index, nest->store->value)) return std::nullopt;
  const auto& loops = nest->loops;
  const ir::Set* store = nest->store;
  std::size_t first_reduction = loops.size();
  std::int64_t window = 1;
  while (first_reduction > 0 && !ir::mentions(store->index, loops[first_reduction - 1]->index)) {
    --first_reduction;
    window *= loops[first_reduction]->end - loops[first_reduction]->begin;
  }
  if (first_reduction == loops.size() || first_reduction == 0 || window > max_window) return std::nullopt;
  return Privatize{store->node->id, loops[first_reduction]->index};
}

}  // namespace cannl::schedule::detail
