// Fuse_epilogue (semantics-backend.md 8.2, `shared` dropped): an elementwise tail (bias,
// activation, residual) that reads an accumulated node after the loop producing it moves into
// that loop, right after the accumulation (the store-back site), so each row is finished while
// it is still in cache and, under a Grid anchor, in the same parallel chunk.
//
//   for a in [0, M):  <accumulate t[a, ..]>          for a in [0, M):
//   <independent statements>                 =>        <accumulate t[a, ..]>
//   for c in [0, M):  u[c, j] = f(t[c, j])               for j: u[a, j] = f(t[a, j])
//                                                      <independent statements>
//
// The consumer is the first statement after the anchor (same sequence) touching the target; its
// outermost loop must span the anchor's range (split it like the anchor first) and is replaced by
// the anchor's index. The move is legal when no consumer iteration meets another anchor iteration
// on a cell one of them writes (the affine access relations separate them per iteration of the
// anchor; for the target this means the consumer reads only cells its own anchor iteration
// finished), nothing between the two sites touches what the consumer writes or writes what it
// reads, and, under a Grid anchor, the consumer's iterations are independent. Nothing is
// recomputed or re-associated: bitwise.
#include <algorithm>
#include <set>

#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// The sequence holding the anchor as a direct statement (nested Seqs flattened).
struct Siblings {
  const ir::Stmt* seq = nullptr;
  std::vector<ir::StmtRef> stmts;
  std::size_t anchor = 0;
};

std::optional<Siblings> siblings_of(const ir::StmtRef& root, ir::Symbol anchor) {
  std::optional<Siblings> out;
  ir::for_each_stmt(root, [&](const ir::Stmt& s) {
    if (out || !std::holds_alternative<ir::Seq>(s.node)) return;
    const auto stmts = flatten_seq(std::make_shared<const ir::Stmt>(s));
    for (std::size_t k = 0; k < stmts.size(); ++k) {
      const auto* f = std::get_if<ir::For>(&stmts[k]->node);
      if (f && f->index == anchor) out = Siblings{&s, stmts, k};
    }
  });
  return out;
}

bool touches(const LoopAccesses& acc, const ir::NodeRef& node, bool reads_only) {
  return std::any_of(acc.accesses.begin(), acc.accesses.end(),
                     [&](const Access& a) { return a.node == node && !(reads_only && a.write); });
}

// Locals the consumer reads but does not declare itself: moving it could change their values.
bool reads_outside_local(const ir::StmtRef& consumer) {
  std::set<int> declared, read;
  ir::for_each_stmt(consumer, [&](const ir::Stmt& s) {
    if (const auto* d = std::get_if<ir::DeclareLocal>(&s.node)) declared.insert(d->scope_id);
  });
  ir::for_each_scalar(consumer, [&](const ir::Scalar& s) {
    if (const auto* l = std::get_if<ir::LocalScope>(&s.node)) declared.insert(l->scope_id);
    if (const auto* g = std::get_if<ir::GetLocal>(&s.node)) read.insert(g->scope_id);
  });
  return std::any_of(read.begin(), read.end(), [&](int id) { return !declared.contains(id); });
}

class SeqReplacer : public ir::TreeMapper {
 public:
  SeqReplacer(const ir::Stmt* target, ir::StmtRef replacement) : target_(target), replacement_(std::move(replacement)) {}
  ir::StmtRef map_stmt(const ir::StmtRef& s) override { return s.get() == target_ ? replacement_ : map_children(s); }

 private:
  const ir::Stmt* target_;
  ir::StmtRef replacement_;
};

// One fusion being checked: the routine, the anchor, the consumer and the error context.
struct Fusion {
  const ir::LoweredRoutine& r;
  const LoopSite& anchor;
  const ir::For& consumer;
  const ir::NodeRef& target;
  const std::string& action;

  [[noreturn]] void fail_at_consumer(const std::string& problem, const std::string& alternatives) const {
    throw_schedule_error(r, consumer.index, action, problem, alternatives);
  }
  std::string anchor_name() const { return name_of(r, anchor.loop->index); }
  std::string consumer_name() const { return name_of(r, consumer.index); }
};

// Consumer iteration a now runs before anchor iterations a' > a: no cell may be shared across
// different iterations when either side writes it.
void check_against_anchor(const Fusion& fu, const LoopAccesses& anchor_acc, const LoopAccesses& consumer_acc) {
  const ir::Symbol a = fu.anchor.loop->index;
  const auto ranges = symbol_ranges(fu.r, fu.anchor.enclosing);
  std::map<ir::Symbol, SymbolRange> inner = anchor_acc.inner;
  inner.insert(consumer_acc.inner.begin(), consumer_acc.inner.end());
  for (const Access& x : consumer_acc.accesses)
    for (const Access& y : anchor_acc.accesses) {
      if (x.node != y.node || !(x.write || y.write) || separated_by(y, x, a, ranges, inner)) continue;
      if (x.node == fu.target && !x.write)
        fu.fail_at_consumer("the consumer reads " + fu.target->debug_name() + " at cells that other iterations of " +
                                fu.anchor_name() + " write (it may read only the cells its own iteration finished)",
                            "a consumer whose reads of " + fu.target->debug_name() + " follow the anchor's rows");
      fu.fail_at_consumer(x.node->debug_name() + " is " + (x.write ? "written" : "read") + " by the consumer and " +
                              (y.write ? "written" : "read") + " by other iterations of " + fu.anchor_name(),
                          "none: the consumer depends on the anchor's later iterations");
    }
}

// Under a Grid anchor the consumer's iterations run in parallel too.
void check_parallel_consumer(const Fusion& fu, const LoopAccesses& consumer_acc) {
  if (fu.anchor.loop->axis == ir::AxisType::Serial) return;
  const auto ranges = symbol_ranges(fu.r, fu.anchor.enclosing);
  for (const Access& x : consumer_acc.accesses)
    for (const Access& y : consumer_acc.accesses)
      if (x.write && x.node == y.node && !separated_by(x, y, fu.anchor.loop->index, ranges, consumer_acc.inner))
        fu.fail_at_consumer("a race: the anchor " + fu.anchor_name() + " is " +
                                std::string(ir::axis_type_name(fu.anchor.loop->axis)) + " and iterations of the consumer " +
                                fu.consumer_name() + " may both reach a cell of " + x.node->debug_name(),
                            "fuse into a serial anchor, or retype the anchor after fusing");
}

// The consumer now runs before the statements between the sites.
void check_between(const Fusion& fu, const std::vector<ir::StmtRef>& between, const LoopAccesses& consumer_acc) {
  for (const auto& s : between) {
    const LoopAccesses acc = collect_accesses(s);
    for (const Access& x : consumer_acc.accesses)
      for (const Access& y : acc.accesses)
        if (x.node == y.node && (x.write || y.write))
          fu.fail_at_consumer("a statement between " + fu.anchor_name() + " and the consumer " +
                                  (y.write ? "writes " : "reads ") + x.node->debug_name() + ", which the consumer " +
                                  (x.write ? "writes" : "reads"),
                              "none: the consumer cannot move above that statement");
  }
}

std::string action_of(const ir::LoweredRoutine& r, const FuseEpilogue& t, const ir::NodeRef& target) {
  return "fuse_epilogue " + (target ? target->debug_name() : "n" + std::to_string(t.target_id)) + " into " +
         name_of(r, t.anchor);
}

ir::NodeRef node_with_id(const ir::LoweredRoutine& r, int id) {
  const auto nodes = ir::nodes_of(r.body);
  const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const ir::NodeRef& n) { return n->id == id; });
  return it == nodes.end() ? nullptr : *it;
}

// The anchor's checks that need no consumer.
void check_anchor(const ir::LoweredRoutine& r, const LoopSite& site, const ir::NodeRef& target, const std::string& action) {
  const ir::Symbol a = site.loop->index;
  if (!target) throw_schedule_error(r, a, action, "the routine does not touch that node", "a node the anchor loop writes");
  if (site.in_local_scope)
    throw_schedule_error(r, a, action, "the anchor is inside an inlined computation (local scope)", "a loop outside it");
  if (site.loop->axis != ir::AxisType::Serial && site.loop->axis != ir::AxisType::Grid)
    throw_schedule_error(r, a, action, "the anchor is " + std::string(ir::axis_type_name(site.loop->axis)),
                         "a serial or grid anchor");
  const LoopAccesses acc = collect_accesses(site.loop->body);
  if (!std::any_of(acc.accesses.begin(), acc.accesses.end(), [&](const Access& x) { return x.node == target && x.write; }))
    throw_schedule_error(r, a, action, "the anchor loop does not write " + target->debug_name(),
                         "the loop that accumulates " + target->debug_name());
}

// The first statement after the anchor that touches the target: it must read it and be a loop
// over the anchor's range.
std::size_t find_consumer(const ir::LoweredRoutine& r, const LoopSite& site, const Siblings& sib,
                          const ir::NodeRef& target, const std::string& action) {
  const ir::Symbol a = site.loop->index;
  std::size_t q = sib.anchor + 1;
  while (q < sib.stmts.size() && !touches(collect_accesses(sib.stmts[q]), target, false)) ++q;
  const std::string none = "no statement after the anchor (in the same sequence) reads " + target->debug_name();
  if (q == sib.stmts.size()) throw_schedule_error(r, a, action, none, "an anchor followed by an elementwise tail");
  const auto* f = std::get_if<ir::For>(&sib.stmts[q]->node);
  if (!touches(collect_accesses(sib.stmts[q]), target, true))
    throw_schedule_error(r, a, action, none + " before it is overwritten", "an anchor followed by an elementwise tail");
  if (!f) throw_schedule_error(r, a, action, "the first reader of " + target->debug_name() + " after the anchor is not a loop",
                               "a consumer loop nest");
  if (f->begin != site.loop->begin || f->end != site.loop->end)
    throw_schedule_error(r, f->index, action,
                         "the consumer loop " + name_of(r, f->index) + " spans [" + std::to_string(f->begin) + ", " +
                             std::to_string(f->end) + ") but the anchor " + name_of(r, a) + " spans [" +
                             std::to_string(site.loop->begin) + ", " + std::to_string(site.loop->end) + ")",
                         "split the consumer loop like the anchor first, then fuse");
  return q;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const FuseEpilogue& t) {
  const ir::NodeRef target = node_with_id(r, t.target_id);
  const std::string action = action_of(r, t, target);
  const LoopSite site = require_loop(r, t.anchor, action);
  check_anchor(r, site, target, action);
  const auto sib = siblings_of(r.body, t.anchor);
  if (!sib || sib->anchor + 1 == sib->stmts.size())
    throw_schedule_error(r, t.anchor, action, "no statement follows the anchor in its sequence",
                         "an anchor followed by an elementwise tail");
  const std::size_t q = find_consumer(r, site, *sib, target, action);
  const auto& consumer = std::get<ir::For>(sib->stmts[q]->node);
  const Fusion fu{r, site, consumer, target, action};
  // Re-indexing: consumer iteration c is anchor iteration a (the ranges are equal).
  const ir::StmtRef moved = substitute_symbol(consumer.body, consumer.index, ir::AxisIndex::iterator(t.anchor));
  const LoopAccesses consumer_acc = collect_accesses(moved);
  if (!consumer_acc.shared_local_writes.empty() || reads_outside_local(moved))
    fu.fail_at_consumer("the consumer uses a local declared outside it", "a consumer whose locals are its own");
  check_against_anchor(fu, collect_accesses(site.loop->body), consumer_acc);
  check_parallel_consumer(fu, consumer_acc);
  check_between(fu, {sib->stmts.begin() + static_cast<std::ptrdiff_t>(sib->anchor) + 1,
                     sib->stmts.begin() + static_cast<std::ptrdiff_t>(q)}, consumer_acc);

  std::vector<ir::StmtRef> stmts;
  for (std::size_t k = 0; k < sib->stmts.size(); ++k) {
    if (k == q) continue;
    if (k != sib->anchor) { stmts.push_back(sib->stmts[k]); continue; }
    const ir::For& f = *site.loop;
    stmts.push_back(ir::for_loop(f.index, f.begin, f.end, ir::seq({f.body, moved}), f.axis));
  }
  return with_body(r, SeqReplacer(sib->seq, ir::seq(std::move(stmts))).map_stmt(r.body));
}

// In traces: fuse_epilogue <target node> <anchor loop>
std::string_view trace_name(Kind<FuseEpilogue>) { return "fuse_epilogue"; }

void print_args(StepWriter& out, const FuseEpilogue& t) { out.node(t.target_id).loop(t.anchor); }

FuseEpilogue parse_args(const StepReader& in, Kind<FuseEpilogue>) {
  return FuseEpilogue{in.node(1), in.loop(2)};
}

}  // namespace cannl::schedule::detail
