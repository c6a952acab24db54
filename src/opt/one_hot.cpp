// The one-hot rewrites (semantics 4.8, gh-343; 0.8 notes "transposed one-hot pattern").
//
// A loop `for k in [0, n)` whose body is a nest of loops around one accumulation, with a
// contribution matched by match_one_hot (`(k == e) * x` or `Where(k == e, x, 0)`, e free of k,
// the comparison exact for every k):
//  * gather (embedding forward): the accumulated cell does not depend on k and x = table[.., k, ..]
//    with k alone on axis p and n the table's extent there: only k == e contributes, so the k loop
//    goes and x becomes GetDynamic(table, row e on axis p), which reads 0 when e selects no row
//    (exactly the sum of zeros the loop computed);
//  * scatter (embedding backward): the accumulated cell is h[.., k, ..] with k alone on axis p,
//    n = h's extent there and x free of k: the k loop goes and the accumulation becomes
//    SetDynamic(h, row e on axis p, x). Each cell's row fixes k, so every cell still receives
//    its contributions in the order of the remaining loops: serial and deterministic.
// Dropped iterations only added exact zeros (x * 0, or the Where's 0); a non-finite x in a
// row not selected no longer turns the sum into NaN, as in the reference implementation.
// A selector may also be read from a materialized one-hot node (one_hot_producers.h).
// For a gather, the loops inside k must each index their own axis of the accumulated cell (the
// cells they write are distinct), so dropping k keeps each cell's order of additions. A
// scatter's nest is then reordered with the table's cell loops outermost (cells_outside).
#include "one_hot.h"

#include <algorithm>

#include "cannl/ir/tree_mapper.h"
#include "one_hot_match.h"
#include "one_hot_producers.h"

namespace cannl::opt {

namespace {

using ir::Op;

// The loops between the reduction loop and its single accumulation statement.
struct Nest {
  std::vector<const ir::For*> loops;  // outermost first
  ir::StmtRef leaf;
};

Nest nest_of(const ir::StmtRef& body) {
  Nest n;
  ir::StmtRef cur = body;
  while (true) {
    if (const auto* q = std::get_if<ir::Seq>(&cur->node); q && q->stmts.size() == 1) {
      cur = q->stmts[0];
    } else if (const auto* f = std::get_if<ir::For>(&cur->node)) {
      n.loops.push_back(f);
      cur = f->body;
    } else {
      break;
    }
  }
  n.leaf = cur;
  return n;
}

ir::StmtRef rebuild(const Nest& n, ir::StmtRef leaf) {
  for (auto it = n.loops.rbegin(); it != n.loops.rend(); ++it)
    leaf = ir::for_loop((*it)->index, (*it)->begin, (*it)->end, std::move(leaf), (*it)->axis);
  return leaf;
}

// An accumulation `self + c` or `c + self`, or the simplifier's fused `fma(x, y, self)` (c =
// x * y): the contribution c and whether self came first. The fused form drops to `self + g`
// with g the gathered (or scattered) factor: fma(g, 1, self) rounds g + self once, as the Add
// does, and the unselected rows' fma(x, 0, self) added the exact zero the Mul form adds.
struct Accumulation {
  const ir::Apply* add = nullptr;  // the Add or the Fma
  ir::ScalarRef contribution;
  bool self_first = true;
  ir::ScalarRef self;  // the accumulator's read
};

std::optional<Accumulation> accumulation(const ir::ScalarRef& value, const auto& is_self) {
  const auto* a = std::get_if<ir::Apply>(&value->node);
  if (a && a->op == Op::Fma && a->args.size() == 3 && is_self(a->args[2]) && !is_self(a->args[0]) &&
      !is_self(a->args[1]))
    return Accumulation{a, ir::apply(Op::Mul, a->dtype, {a->args[0], a->args[1]}), true, a->args[2]};
  if (!a || a->op != Op::Add || a->args.size() != 2) return std::nullopt;
  if (is_self(a->args[0]) && !is_self(a->args[1])) return Accumulation{a, a->args[1], true, a->args[0]};
  if (is_self(a->args[1]) && !is_self(a->args[0])) return Accumulation{a, a->args[0], false, a->args[1]};
  return std::nullopt;
}

ir::ScalarRef accumulate(const Accumulation& acc, const ir::ScalarRef& self, ir::ScalarRef c) {
  if (acc.self_first) return ir::apply(Op::Add, acc.add->dtype, {self, std::move(c)});
  return ir::apply(Op::Add, acc.add->dtype, {std::move(c), self});
}

bool reads_node(const ir::ScalarRef& s, const ir::NodeRef& node) {
  const auto nodes = ir::nodes_of(s);
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// The gathered value for x = table[.., k, ..], or nullopt when x is not such a read.
std::optional<ir::ScalarRef> gathered(const ir::For& k, const OneHotMatch& m) {
  const auto* g = std::get_if<ir::Get>(&m.other->node);
  if (!g) return std::nullopt;
  const auto axis = sole_axis_of(g->index, k.index);
  if (!axis || k.begin != 0 || k.end != g->node->dims[static_cast<std::size_t>(*axis)]) return std::nullopt;
  auto row = ir::get_dynamic(g->node, ir::with_dynamic_row(g->index, *axis, 0), *axis, m.row);
  return converted(row, m.dtype);
}

bool index_mentions(const std::vector<ir::AxisIndex>& index, ir::Symbol k) {
  return std::any_of(index.begin(), index.end(), [&](const ir::AxisIndex& i) {
    return std::any_of(i.terms.begin(), i.terms.end(), [&](const auto& t) { return t.symbol == k && t.coeff != 0; });
  });
}

// Each inner loop indexes an axis of `index` on its own, so the nest writes distinct cells.
bool distinct_cells(const Nest& n, const std::vector<ir::AxisIndex>& index) {
  return std::all_of(n.loops.begin(), n.loops.end(), [&](const ir::For* f) {
    return std::count(index.begin(), index.end(), ir::AxisIndex::iterator(f->index)) > 0;
  });
}

std::optional<ir::StmtRef> rewrite_set(const ir::For& k, const Nest& n, const ir::Set& s,
                                       const SelectorSource& source) {
  const auto is_self = [&](const ir::ScalarRef& x) {
    const auto* g = std::get_if<ir::Get>(&x->node);
    return g && g->node == s.node && g->index == s.index;
  };
  const auto acc = accumulation(s.value, is_self);
  if (!acc) return std::nullopt;
  const auto m = match_one_hot(acc->contribution, k.index, k.begin, k.end, source);
  if (!m || reads_node(m->row, s.node) || reads_node(m->other, s.node)) return std::nullopt;
  const ir::ScalarRef self = ir::get(s.node, s.index);
  if (!index_mentions(s.index, k.index)) {
    const auto value = gathered(k, *m);
    if (!value || !distinct_cells(n, s.index)) return std::nullopt;
    return rebuild(n, ir::set(s.node, s.index, accumulate(*acc, self, *value), s.comment));
  }
  const auto axis = sole_axis_of(s.index, k.index);
  if (!axis || mentions(m->other, k.index) || k.begin != 0 ||
      k.end != s.node->dims[static_cast<std::size_t>(*axis)] ||
      acc->add->dtype != ir::compute_dtype(s.node->dtype))
    return std::nullopt;
  return rebuild(n, ir::set_dynamic(s.node, ir::with_dynamic_row(s.index, *axis, 0), *axis, m->row,
                                    converted(m->other, m->dtype), Op::Add, s.comment));
}

// An inlined reduction {v := v + (k == e) * table[.., k, ..]} (only k itself loops around it).
std::optional<ir::StmtRef> rewrite_set_local(const ir::For& k, const Nest& n, const ir::SetLocal& s,
                                             const SelectorSource& source) {
  if (!n.loops.empty()) return std::nullopt;
  const auto is_self = [&](const ir::ScalarRef& x) {
    const auto* g = std::get_if<ir::GetLocal>(&x->node);
    return g && g->scope_id == s.scope_id;
  };
  const auto acc = accumulation(s.value, is_self);
  if (!acc) return std::nullopt;
  const auto m = match_one_hot(acc->contribution, k.index, k.begin, k.end, source);
  if (!m || ir::count_local_reads(m->row, s.scope_id) > 0) return std::nullopt;
  const auto value = gathered(k, *m);
  if (!value) return std::nullopt;
  return ir::set_local(s.scope_id, accumulate(*acc, acc->self, *value));
}

class OneHotRewriter : public ir::TreeMapper {
 public:
  explicit OneHotRewriter(SelectorSource source) : source_(std::move(source)) {}

  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const ir::StmtRef out = map_children(s);  // inner loops first
    const auto* f = std::get_if<ir::For>(&out->node);
    if (!f) return out;
    const Nest n = nest_of(f->body);
    std::optional<ir::StmtRef> rewritten;
    if (const auto* set = std::get_if<ir::Set>(&n.leaf->node)) rewritten = rewrite_set(*f, n, *set, source_);
    if (const auto* local = std::get_if<ir::SetLocal>(&n.leaf->node)) rewritten = rewrite_set_local(*f, n, *local, source_);
    return rewritten ? *rewritten : out;
  }

 private:
  SelectorSource source_;
};

// A scatter nest `for ..: h[c, ?row] add= x` with the loops that pick the cell's static axes
// (each alone on its axis, absent from the row) moved outside those that pick the row (absent
// from the static axes), each group in its order: a cell still receives its contributions in
// the order of the row loops, and one slice of h (a [d, vocab] table's row of d) takes the whole
// scatter while it is in cache, instead of every contribution touching a line of its own.
ir::StmtRef cells_outside(const ir::StmtRef& s) {
  const Nest n = nest_of(s);
  const auto* x = std::get_if<ir::SetDynamic>(&n.leaf->node);
  if (!x || n.loops.size() < 2) return s;
  auto on_static_axes = [&](ir::Symbol f) {
    for (std::size_t a = 0; a < x->index.size(); ++a)
      if (static_cast<int>(a) != x->dyn_axis && x->index[a].mentions(f)) return true;
    return false;
  };
  auto alone_on_an_axis = [&](ir::Symbol f) {
    for (std::size_t a = 0; a < x->index.size(); ++a)
      if (static_cast<int>(a) != x->dyn_axis && x->index[a] == ir::AxisIndex::iterator(f)) return true;
    return false;
  };
  std::vector<const ir::For*> cells, rows;
  for (const ir::For* f : n.loops) {
    if (alone_on_an_axis(f->index) && !mentions(x->dyn_value, f->index)) cells.push_back(f);
    else if (!on_static_axes(f->index)) rows.push_back(f);
    else return s;
  }
  if (cells.empty() || rows.empty()) return s;
  Nest sorted{cells, n.leaf};
  sorted.loops.insert(sorted.loops.end(), rows.begin(), rows.end());
  return sorted.loops == n.loops ? s : rebuild(sorted, n.leaf);
}

void flatten(const ir::StmtRef& s, std::vector<ir::StmtRef>& out) {
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    for (const auto& x : q->stmts) flatten(x, out);
  } else {
    out.push_back(s);
  }
}

}  // namespace

ir::LoweredRoutine rewrite_one_hot_reductions(const ir::LoweredRoutine& routine, const PassContext& /*ctx*/) {
  ir::LoweredRoutine out = routine;
  if (!routine.body) return out;
  std::vector<ir::StmtRef> top;
  flatten(routine.body, top);
  const SelectorProducers producers(top);
  bool changed = false;
  for (std::size_t t = 0; t < top.size(); ++t) {
    ir::StmtRef s = OneHotRewriter(producers.source_at(t)).map_stmt(top[t]);
    if (s != top[t]) s = cells_outside(s);
    changed = changed || s != top[t];
    top[t] = s;
  }
  if (changed) out.body = ir::seq(std::move(top));
  return out;
}

}  // namespace cannl::opt
