// Privatizing windowed reductions (see window_nest.h).
#include "schedule/window_nest.h"

#include <algorithm>

#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"
#include "schedule/matmul_nest.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

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

namespace {

// The nest's iterations after `plan` (the cell loops grown by their windows) over those before.
double growth(const std::vector<const ir::For*>& loops, const GatherWindows& plan) {
  double before = 1, after = 1;
  for (const ir::For* f : loops) {
    double grown = static_cast<double>(f->end - f->begin);
    for (const auto& [o, k] : plan.windows)
      if (o == f->index)
        for (const ir::For* g : loops)
          if (g->index == k) grown += static_cast<double>(g->end - g->begin - 1);
    before *= static_cast<double>(f->end - f->begin);
    after *= grown;
  }
  return after / before;
}

}  // namespace

std::optional<GatherWindows> plan_gather_windows(const ir::LoweredRoutine& r, const ir::For& top, double max_growth,
                                                 std::int64_t min_tile_work, const ir::Target& target, bool must_tile) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest) return std::nullopt;
  const ir::Set& store = *nest->store;
  const auto update = parse_matmul_update(store);
  if (!update) return std::nullopt;
  auto reads = [](const ir::Get& g, ir::Symbol s) { return ir::mentions(g.index, s); };
  GatherWindows plan{top.index, {}};
  for (const ir::AxisIndex& axis : store.index) {
    if (axis.terms.size() != 2 || axis.terms[0].coeff != 1 || axis.terms[1].coeff != 1) continue;
    ir::Symbol o = axis.terms[0].symbol, k = axis.terms[1].symbol;
    // o is the cell loop of the operand that moves along d's axis, k the other's window.
    const bool o_in_a = reads(*update->a, o) && !reads(*update->b, o);
    const bool k_in_a = reads(*update->a, k) && !reads(*update->b, k);
    if (o_in_a == k_in_a) continue;
    if (k_in_a) std::swap(o, k);
    plan.windows.emplace_back(o, k);
  }
  if (plan.windows.empty() || growth(nest->loops, plan) > max_growth) return std::nullopt;
  ir::LoweredRoutine gathered;
  try {
    gathered = apply_transform(r, plan);  // its checks: one moving operand, spanned axes
  } catch (const cannl::ScheduleError&) {
    return std::nullopt;
  }
  if (!must_tile) return plan;
  const auto site = find_loop(gathered.body, top.index);
  if (!site || !plan_matmul_nest(*site->loop, min_tile_work, true, target)) return std::nullopt;
  return plan;
}

std::optional<std::vector<Transform>> plan_staged_windows(const ir::For& top, std::int64_t min_steps,
                                                          std::int64_t max_cells, std::int64_t cache_cells,
                                                          std::int64_t chunks) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest || nest->store->index.empty() || !parse_matmul_update(*nest->store)) return std::nullopt;
  const ir::Set& store = *nest->store;
  const ir::AxisIndex& last = store.index.back();
  if (!last.is_iterator() || !std::any_of(store.index.begin(), store.index.end(), [](const ir::AxisIndex& a) { return a.terms.size() > 1; }))
    return std::nullopt;
  std::vector<ir::Symbol> order;
  for (const ir::For* f : nest->loops) order.push_back(f->index);
  const ir::Symbol channel = last.terms[0].symbol;
  const auto at = std::find(order.begin(), order.end(), channel);
  if (at == order.end() || std::count_if(store.index.begin(), store.index.end(), [&](const ir::AxisIndex& a) { return a.mentions(channel); }) != 1)
    return std::nullopt;
  std::vector<Transform> steps;
  for (auto p = at; p + 1 != order.end(); ++p) {
    steps.push_back(Swap{*p, *(p + 1)});
    std::iter_swap(p, p + 1);
  }
  auto loop_of = [&](ir::Symbol s) {
    return *std::find_if(nest->loops.begin(), nest->loops.end(), [&](const ir::For* f) { return f->index == s; });
  };
  std::int64_t cells = 1, work = 1;
  for (const ir::For* f : nest->loops) work *= f->end - f->begin;
  for (const ir::Symbol s : order)
    if (ir::mentions(store.index, s)) cells *= loop_of(s)->end - loop_of(s)->begin;
  if (cells > max_cells || work < min_steps * cells) return std::nullopt;
  // Per iteration of the outermost loop (the batch) when d has an axis of it alone, and all the
  // partials would not stay in cache while one iteration's fit: p is filled and added in one
  // iteration at a time, so the scatter reads it back from cache rather than from memory.
  const ir::For* outer = loop_of(order.front());
  const std::int64_t outer_extent = outer->end - outer->begin;
  const bool own_axis = std::any_of(store.index.begin(), store.index.end(), [&](const ir::AxisIndex& a) {
    return a.is_iterator() && a.terms[0].symbol == outer->index;
  });
  const bool per_outer = order.size() > 3 && own_axis && outer_extent > 1 && cells > cache_cells &&
                         cells / outer_extent <= cache_cells;
  StagePartials partials{order[per_outer ? 1 : 0], {}};
  for (std::size_t n = per_outer ? 1 : 0; n < order.size(); ++n)
    if (ir::mentions(store.index, order[n])) partials.keep.push_back(order[n]);
  partials = with_scatter_loops(std::move(partials));
  if (per_outer) {
    // The outer loop in `chunks` blocks, each with its own partials: the blocks can share the
    // machine's threads (the Grid round proves the block loop parallel). Which block reuses a
    // partial does not change any sum: the bits do not depend on the count.
    std::int64_t count = std::min(chunks, outer_extent);
    while (outer_extent % count != 0) --count;
    const Split blocks = split(outer->index, outer_extent / count);
    steps.push_back(blocks);
    partials.keep.insert(partials.keep.begin(), blocks.outer);
  }
  steps.push_back(std::move(partials));
  return steps;
}

}  // namespace cannl::schedule::detail
