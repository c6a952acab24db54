// Swap (semantics-backend.md 8.2): interchange a perfect nest `for o: for n: body`. Legal when
// every cell keeps the order of its accesses: each pair of accesses to a written node either
// meets only within one (o, n) iteration, or has the same index that fixes o or n (so the
// accesses to one cell vary along a single loop, whose order is kept), or belongs to one
// recognized reduction (re-association licensed for Swap, 8.3). A local declared outside the
// nest and set inside it (a Privatize'd accumulator, a blocked Split_reduce's partial) carries a
// value from iteration to iteration in nest order, which the swap would change: refused.
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// `s` has a nonzero coefficient on some axis whose other symbols are all bound outside the nest.
bool fixed_by_cell(const Access& x, ir::Symbol s, const std::map<ir::Symbol, SymbolRange>& nest) {
  if (x.whole_node) return false;
  for (std::size_t d = 0; d < x.index.size(); ++d) {
    if (static_cast<int>(d) == x.dyn_axis || !x.index[d].mentions(s)) continue;
    bool only_outside = true;
    for (const auto& term : x.index[d].terms)
      if (!(term.symbol == s) && nest.contains(term.symbol)) only_outside = false;
    if (only_outside) return true;
  }
  return false;
}

// "" when swapping keeps every cell's access order, else the offending pair.
std::string order_problem(const ir::LoweredRoutine& r, const LoopSite& site, const ir::For& n) {
  const ir::For& o = *site.loop;
  const LoopAccesses acc = collect_accesses(o.body);
  if (!acc.shared_local_writes.empty())
    return acc.shared_local_writes.front() + " is declared outside the nest and set in it, in an order the swap changes";
  const auto all = symbol_ranges(r, site.enclosing);
  auto nest = acc.inner;
  nest[o.index] = {o.begin, o.end - 1, true};
  auto inside_n = acc.inner;
  inside_n.erase(n.index);
  for (const Access& w : acc.accesses) {
    if (!w.write) continue;
    for (const Access& a : acc.accesses) {
      if (a.node != w.node) continue;
      if (separated_by(w, a, o.index, all, acc.inner) && separated_by(w, a, n.index, all, inside_n)) continue;
      // A scatter's row is chosen at run time, but a cell's other axes still fix o or n.
      const bool same_index = !w.whole_node && !a.whole_node && w.dyn_axis == a.dyn_axis && w.index == a.index;
      if (same_index && (fixed_by_cell(w, o.index, nest) || fixed_by_cell(w, n.index, nest))) continue;
      if (w.reduction >= 0 && a.reduction == w.reduction) continue;
      return w.node->debug_name() + " is accessed by several iterations in an order the swap changes";
    }
  }
  return "";
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Swap& t) {
  const std::string action = "swap " + name_of(r, t.outer) + " and " + name_of(r, t.inner);
  const LoopSite site = require_loop(r, t.outer, action);
  const ir::For& o = *site.loop;
  const auto body = flatten_seq(o.body);
  const ir::For* n = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
  if (!n || !(n->index == t.inner)) {
    std::string alternative = "swap " + name_of(r, t.outer);
    if (body.size() == 1 && n) alternative += " with " + name_of(r, n->index) + " (its only child)";
    else alternative = "none: loop " + name_of(r, t.outer) + "'s body is not a single loop";
    throw_schedule_error(r, t.outer, action,
                         "the loops are not a perfect nest (the inner loop must be the outer loop's whole body)",
                         alternative);
  }
  const std::string problem = order_problem(r, site, *n);
  if (!problem.empty())
    throw_schedule_error(r, t.outer, action, problem, "keep the order, or Split instead");
  const ir::StmtRef swapped = ir::for_loop(
      n->index, n->begin, n->end, ir::for_loop(o.index, o.begin, o.end, n->body, o.axis), n->axis);
  return with_body(r, replace_loop(r.body, t.outer, [&](const ir::For&) { return swapped; }));
}

// In traces: swap <outer loop> <inner loop>
std::string_view trace_name(Kind<Swap>) { return "swap"; }

void print_args(StepWriter& out, const Swap& t) { out.loop(t.outer).loop(t.inner); }

Swap parse_args(const StepReader& in, Kind<Swap>) { return Swap{in.loop(1), in.loop(2)}; }

}  // namespace cannl::schedule::detail
