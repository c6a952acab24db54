// Privatize (semantics-backend.md 8.2): an accumulator cell read and written in every iteration
// of a serial loop lives in a scalar local for the loop's duration (loaded before, stored
// after), so the loop keeps it in a register instead of memory. The local has the node's dtype,
// so every intermediate store rounds exactly as before: bitwise.
#include <algorithm>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

class CellToLocal : public ir::TreeMapper {
 public:
  // Every access of the node in the loop is to the one cell (checked before).
  CellToLocal(ir::NodeRef node, int scope_id) : node_(std::move(node)), id_(scope_id) {}
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    const auto* g = std::get_if<ir::Get>(&s->node);
    if (g && g->node == node_) return ir::get_local(id_, node_->dtype);
    return map_children(s);
  }
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const auto* x = std::get_if<ir::Set>(&s->node);
    if (x && x->node == node_) return ir::set_local(id_, map_scalar(x->value));
    return map_children(s);
  }

 private:
  ir::NodeRef node_;
  int id_;
};

// True when an If inside `f` tests a symbol bound outside it (a Pad or Split remainder guard of
// an enclosing loop): the guard may exclude the very cell, which the load before and the store
// after the loop would then reach unguarded.
bool guard_mentions_outer(const ir::For& f, const LoopAccesses& acc) {
  bool outer = false;
  ir::for_each_stmt(f.body, [&](const ir::Stmt& s) {
    const auto* i = std::get_if<ir::If>(&s.node);
    if (!i) return;
    for (const ir::Symbol x : ir::free_symbols(i->condition))
      outer = outer || (x != f.index && !acc.inner.contains(x));
  });
  return outer;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Privatize& t) {
  const std::string action = "privatize n" + std::to_string(t.node_id) + " over " + name_of(r, t.over);
  const LoopSite site = require_loop(r, t.over, action);
  const ir::For& f = *site.loop;
  if (f.axis != ir::AxisType::Serial && f.axis != ir::AxisType::Unrolled)
    throw_schedule_error(r, t.over, action, "the loop is parallel: one local would be shared by its iterations",
                         "privatize over a serial loop inside it");
  const LoopAccesses acc = collect_accesses(f.body);
  const Access* cell = nullptr;
  bool written = false;
  for (const Access& a : acc.accesses) {
    if (a.node->id != t.node_id) continue;
    const bool fixed_cell = a.dyn_axis < 0 && !a.whole_node &&
                            std::none_of(a.index.begin(), a.index.end(), [&](const ir::AxisIndex& i) {
                              return i.mentions(f.index) || std::any_of(i.terms.begin(), i.terms.end(), [&](const ir::AffineTerm& term) {
                                       return acc.inner.contains(term.symbol);
                                     });
                            });
    if (!fixed_cell || (cell && cell->index != a.index))
      throw_schedule_error(r, t.over, action, "the loop accesses more than one cell of the node (or a run-time row)",
                           "privatize over a loop that reads and writes one cell of it");
    if (a.guarded && guard_mentions_outer(f, acc))
      throw_schedule_error(r, t.over, action, "an access of the node is under a guard that depends on loops around it",
                           "privatize over a loop inside the guard");
    cell = &a;
    written = written || a.write;
  }
  if (!cell || !written)
    throw_schedule_error(r, t.over, action, "the loop does not write that node", "an accumulator the loop writes");
  const ir::NodeRef node = cell->node;
  if (ir::compute_dtype(node->dtype) != node->dtype)
    throw_schedule_error(r, t.over, action, "narrow storage (" + std::string(ir::dtype_name(node->dtype)) + ") would change rounding",
                         "nodes stored in their compute dtype");
  const int id = ir::fresh_scope_id();
  CellToLocal rewrite(node, id);
  const ir::StmtRef replacement = ir::seq({ir::declare_local(id, node->dtype, false),
                                           ir::set_local(id, ir::get(node, cell->index)),
                                           ir::for_loop(f.index, f.begin, f.end, rewrite.map_stmt(f.body), f.axis),
                                           ir::set(node, cell->index, ir::get_local(id, node->dtype), "privatized")});
  return with_body(r, replace_loop(r.body, t.over, [&](const ir::For&) { return replacement; }));
}

// In traces: privatize <node> <loop>
std::string_view trace_name(Kind<Privatize>) { return "privatize"; }

void print_args(StepWriter& out, const Privatize& t) { out.node(t.node_id).loop(t.over); }

Privatize parse_args(const StepReader& in, Kind<Privatize>) { return Privatize{in.node(1), in.loop(2)}; }

}  // namespace cannl::schedule::detail
