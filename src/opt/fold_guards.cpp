// Guard folding (fold_guards.h): a walk that binds loop ranges like the simplifier, but decides
// only guards and dynamic rows.
#include "cannl/opt/fold_guards.h"

#include <cmath>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/ir/tree_mapper.h"
#include "interval.h"
#include "rewrite_rule.h"

namespace cannl::opt {

namespace {

using ir::DType;
using ir::Op;

// Largest magnitude up to which every integer converts exactly to dtype t (0: not a number type
// a row may be held in exactly).
double exact_limit(DType t) {
  switch (t) {
    case DType::F64: return 9007199254740992.0;
    case DType::F32: return 16777216.0;
    case DType::F16: return 2048.0;
    case DType::BF16: return 256.0;
    case DType::I32: return 2147483647.0;
    case DType::I64: return 9007199254740992.0;
    default: return 0;
  }
}

// `index` with the dynamic axis's placeholder replaced by the row expression.
std::vector<ir::AxisIndex> at_row(std::vector<ir::AxisIndex> index, int axis, const ir::AxisIndex& row) {
  index[static_cast<std::size_t>(axis)] = row;
  return index;
}

class GuardFolder : public ir::TreeMapper {
 public:
  explicit GuardFolder(SymbolRanges ranges) : ranges_(std::move(ranges)) {}

  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    const ir::ScalarRef t = map_children(s);
    if (const auto* g = std::get_if<ir::GetDynamic>(&t->node))
      if (const auto row = proven_row(*g->node, g->dyn_axis, g->dyn_value))
        return ir::get(g->node, at_row(g->index, g->dyn_axis, *row));
    return t;
  }

  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* f = std::get_if<ir::For>(&s->node)) {
      if (f->end <= f->begin) return s;
      ranges_.bind(f->index, f->begin, f->end - 1);
      const ir::StmtRef t = map_children(s);
      ranges_.unbind(f->index);
      // A loop whose every guard failed does nothing.
      const auto* body = std::get_if<ir::Seq>(&std::get<ir::For>(t->node).body->node);
      return body && body->stmts.empty() ? ir::seq({}) : t;
    }
    // A tile is its descriptor and its fallback together: changing the fallback would cost the tile.
    if (std::holds_alternative<ir::TileMma>(s->node)) return s;
    if (const auto* i = std::get_if<ir::If>(&s->node)) {
      if (const auto holds = truth(i->condition)) return *holds ? map_stmt(i->body) : ir::seq({});
      return map_children(s);
    }
    const ir::StmtRef t = map_children(s);
    if (const auto* d = std::get_if<ir::SetDynamic>(&t->node)) return plain_scatter(t, *d);
    return t;
  }

 private:
  SymbolRanges ranges_;

  // The truth of a guard at every point of the current ranges, when the intervals decide it.
  std::optional<bool> truth(const ir::ScalarRef& c) const {
    if (const auto k = constant_of(c); k && k->dtype != DType::U4x32) return interp::is_nonzero(*k);
    const auto* a = std::get_if<ir::Apply>(&c->node);
    if (a && (a->op == Op::Cmplt || a->op == Op::Cmpeq || a->op == Op::Cmpne) &&
        ir::compute_dtype(a->dtype) != DType::U4x32) {
      const auto x = seen(a->args[0], a->dtype);
      const auto y = seen(a->args[1], a->dtype);
      if (!x || !y) return std::nullopt;
      const auto decided = decide_comparison(a->op, *x, *y);
      if (decided) return *decided != 0;
      return std::nullopt;
    }
    if (a && (a->op == Op::And || a->op == Op::Or)) {
      const auto l = operand_truth(a->args[0], a->dtype);
      const auto r = operand_truth(a->args[1], a->dtype);
      const bool dominant = a->op == Op::Or;  // the value that decides alone
      if ((l && *l == dominant) || (r && *r == dominant)) return dominant;
      if (l && r) return !dominant;
      return std::nullopt;
    }
    if (a && a->op == Op::Not) {
      const auto x = operand_truth(a->args[0], a->dtype);
      return x ? std::optional<bool>(!*x) : std::nullopt;
    }
    const auto iv = scalar_interval(c, ranges_);
    if (!iv) return std::nullopt;
    if (iv->lo > 0 || iv->hi < 0) return true;
    if (iv->is_point() && iv->lo == 0) return false;
    return std::nullopt;
  }

  // The truth of an operand of a logic op of dtype d, which tests it converted to d's compute
  // dtype (the f32 0.5 is false as an i32). A predicate is 0 or 1, true or false in every dtype.
  std::optional<bool> operand_truth(const ir::ScalarRef& x, DType d) const {
    if (const auto* p = std::get_if<ir::Apply>(&x->node); p && ir::op_is_predicate(p->op)) return truth(x);
    return truth(op_cast(x, ir::compute_dtype(d)));
  }

  std::optional<Interval> seen(const ir::ScalarRef& x, DType d) const {
    const auto iv = scalar_interval(x, ranges_);
    return iv ? convert_interval(*iv, ir::scalar_dtype(*x), ir::compute_dtype(d)) : std::nullopt;
  }

  // The row of a dynamic access as an index expression, when its value is one (possibly through
  // exact conversions) and lies inside the axis at every point: the access is then static.
  std::optional<ir::AxisIndex> proven_row(const ir::TensorNode& node, int axis, const ir::ScalarRef& value) const {
    ir::ScalarRef x = value;
    std::optional<Interval> range;
    for (;;) {
      if (const auto* e = std::get_if<ir::EmbedIndex>(&x->node)) {
        range = index_interval(e->index, ranges_);
        if (!range) return std::nullopt;
        break;
      }
      const auto* a = std::get_if<ir::Apply>(&x->node);
      if (!a || a->op != Op::Identity || a->args.size() != 1) return std::nullopt;
      x = a->args[0];
    }
    // Every dtype on the way from the index to the f64 row holds the range's integers exactly.
    for (ir::ScalarRef y = value; !std::holds_alternative<ir::EmbedIndex>(y->node);
         y = std::get<ir::Apply>(y->node).args[0]) {
      const double limit = exact_limit(ir::scalar_dtype(*y));
      if (std::abs(range->lo) > limit || std::abs(range->hi) > limit) return std::nullopt;
      if (!ir::is_float(ir::scalar_dtype(*y)) && range->lo < 0) return std::nullopt;
    }
    const auto extent = node.dims[static_cast<std::size_t>(axis)];
    if (range->lo < 0 || range->hi > static_cast<double>(extent - 1)) return std::nullopt;
    return std::get<ir::EmbedIndex>(x->node).index;
  }

  // A scatter at a proven row: the read-modify-write SetDynamic means, as a plain Set.
  ir::StmtRef plain_scatter(const ir::StmtRef& s, const ir::SetDynamic& d) const {
    const auto row = proven_row(*d.node, d.dyn_axis, d.dyn_value);
    if (!row) return s;
    const auto at = at_row(d.index, d.dyn_axis, *row);
    const auto value = ir::apply(d.accum, ir::compute_dtype(d.node->dtype), {ir::get(d.node, at), d.value});
    return ir::set(d.node, at, value, d.comment);
  }
};

}  // namespace

ir::LoweredRoutine fold_guards(const ir::LoweredRoutine& routine) {
  ir::LoweredRoutine out = routine;
  if (routine.body) out.body = GuardFolder(SymbolRanges::of_statics(routine.statics)).map_stmt(routine.body);
  return out;
}

}  // namespace cannl::opt
