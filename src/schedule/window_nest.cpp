// Privatizing windowed reductions (see window_nest.h).
#include "schedule/window_nest.h"

#include <algorithm>
#include <functional>

#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

namespace {

bool mentions(const std::vector<ir::AxisIndex>& index, ir::Symbol s) {
  return std::any_of(index.begin(), index.end(), [&](const ir::AxisIndex& i) { return i.mentions(s); });
}

// The store reads its own cell: d[idx] = f(.., d[idx], ..), an accumulation of some kind.
bool reads_own_cell(const ir::Set& x) {
  bool found = false;
  const std::function<void(const ir::ScalarRef&)> walk = [&](const ir::ScalarRef& s) {
    if (!s || found) return;
    if (const auto* g = std::get_if<ir::Get>(&s->node)) found = g->node == x.node && g->index == x.index;
    if (const auto* a = std::get_if<ir::Apply>(&s->node))
      for (const auto& arg : a->args) walk(arg);
  };
  walk(x.value);
  return found;
}

}  // namespace

std::optional<Privatize> plan_window_privatize(const ir::For& top, std::int64_t max_window) {
  ir::StmtRef leaf;
  const std::vector<const ir::For*> loops = perfect_nest(top, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  if (loops.size() < 2 || !store || !reads_own_cell(*store)) return std::nullopt;
  if (std::any_of(loops.begin(), loops.end(), [](const ir::For* f) { return f->axis != ir::AxisType::Serial; }))
    return std::nullopt;
  std::size_t first_reduction = loops.size();
  std::int64_t window = 1;
  while (first_reduction > 0 && !mentions(store->index, loops[first_reduction - 1]->index)) {
    --first_reduction;
    window *= loops[first_reduction]->end - loops[first_reduction]->begin;
  }
  if (first_reduction == loops.size() || first_reduction == 0 || window > max_window) return std::nullopt;
  return Privatize{store->node->id, loops[first_reduction]->index};
}

}  // namespace cannl::schedule::detail
