// The exact rules of the simplifier: constant folding (through scalar_semantics.h, so a folded
// value is bit for bit what the interpreter and the generated C compute), identities, projections
// and decided selections. Algebraic rules live in simplify_algebra_rules.cpp; the table is here.
//
// Exactness policy (documented choice): every default rule gives the unoptimized result except
//  * x + 0 -> x may keep a -0 where the addition gave +0 (equal as numbers);
//  * x * 0 -> 0 and 0 / x -> 0 on floats fire only when interval analysis proves x finite (and,
//    for 0 / x, nonzero): the reference folds them always, which turns inf * 0 = NaN into 0.
#include <cmath>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"
#include "rewrite_rule.h"

namespace cannl::opt {

using ir::DType;
using ir::Op;
using ir::ScalarRef;

std::vector<RewriteRule> algebra_rules();  // simplify_algebra_rules.cpp

namespace {

bool is_int(DType d) { return d != DType::U4x32 && !ir::is_float(d); }
bool is_random(Op op) { return op == Op::Uniform1 || op == Op::ThreefryCrypto || op == Op::ThreefryLight; }

// The interval of x as an op of dtype d sees it (after conversion to compute_dtype(d)).
std::optional<Interval> seen_interval(const ScalarRef& x, DType d, const RuleEnv& env) {
  const auto iv = scalar_interval(x, env.ranges);
  return iv ? convert_interval(*iv, ir::scalar_dtype(*x), ir::compute_dtype(d)) : std::nullopt;
}

ScalarRef zero_of(DType d) { return scalar_of(interp::convert(interp::Value::of(0.0), d)); }
ScalarRef one_of(DType d) { return scalar_of(interp::convert(interp::Value::of(1.0), d)); }

ScalarRef fold_constants(const ir::Apply& a, const RuleEnv&) {
  if (a.dtype == DType::U4x32 || is_random(a.op)) return nullptr;
  std::vector<interp::Value> values;
  for (const auto& arg : a.args) {
    auto v = constant_of(arg);
    if (!v || v->dtype == DType::U4x32) return nullptr;
    values.push_back(*v);
  }
  try {
    return scalar_of(interp::apply_op(a.op, a.dtype, values));
  } catch (const InternalError&) {
    return nullptr;  // an op undefined in this dtype: leave it for the verifier to report
  }
}

ScalarRef drop_projection(const ir::Apply& a, const RuleEnv&) {
  if (a.op == Op::Identity && ir::scalar_dtype(*a.args[0]) == a.dtype) return a.args[0];
  if (a.op == Op::Arg1) return op_cast(a.args[0], a.dtype);
  if (a.op == Op::Arg2) return op_cast(a.args[1], a.dtype);
  return nullptr;
}

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x.
ScalarRef neutral_operand(const ir::Apply& a, const RuleEnv&) {
  if (a.dtype == DType::U4x32 || a.args.size() != 2) return nullptr;
  const ScalarRef& x = a.args[0];
  const ScalarRef& y = a.args[1];
  switch (a.op) {
    case Op::Add:
      if (is_constant(y, 0)) return op_cast(x, a.dtype);
      if (is_constant(x, 0)) return op_cast(y, a.dtype);
      return nullptr;
    case Op::Sub: return is_constant(y, 0) ? op_cast(x, a.dtype) : nullptr;
    case Op::Mul:
      if (is_constant(y, 1)) return op_cast(x, a.dtype);
      if (is_constant(x, 1)) return op_cast(y, a.dtype);
      return nullptr;
    case Op::Div: return is_constant(y, 1) ? op_cast(x, a.dtype) : nullptr;
    default: return nullptr;
  }
}

// x * 0 -> 0 (floats: x proven finite); 0 / x -> 0 (floats: x proven finite and nonzero).
ScalarRef absorbing_zero(const ir::Apply& a, const RuleEnv& env) {
  if (a.dtype == DType::U4x32) return nullptr;
  if (a.op == Op::Mul) {
    const int k = is_constant(a.args[0], 0) ? 1 : is_constant(a.args[1], 0) ? 0 : -1;
    if (k < 0) return nullptr;
    if (is_int(a.dtype) || seen_interval(a.args[static_cast<std::size_t>(k)], a.dtype, env))
      return zero_of(a.dtype);
    return nullptr;
  }
  if (a.op == Op::Div && is_constant(a.args[0], 0)) {
    if (is_int(a.dtype)) return zero_of(a.dtype);
    const auto iv = seen_interval(a.args[1], a.dtype, env);
    if (iv && (iv->lo > 0 || iv->hi < 0)) return zero_of(a.dtype);
  }
  return nullptr;
}

ScalarRef double_negation(const ir::Apply& a, const RuleEnv&) {
  if (a.op != Op::Neg) return nullptr;
  const auto* inner = std::get_if<ir::Apply>(&a.args[0]->node);
  if (!inner || inner->op != Op::Neg || inner->dtype != a.dtype) return nullptr;
  return op_cast(inner->args[0], a.dtype);
}

// where(c, x, y) with c constant or x == y (e.g. where(i == i, a, b) once i == i folded to 1).
ScalarRef decided_where(const ir::Apply& a, const RuleEnv&) {
  if (a.op != Op::Where) return nullptr;
  if (const auto c = constant_of(a.args[0]); c && c->dtype != DType::U4x32)
    return op_cast(interp::is_nonzero(*c) ? a.args[1] : a.args[2], a.dtype);
  if (same_scalar(a.args[1], a.args[2])) return op_cast(a.args[1], a.dtype);
  return nullptr;
}

// x == x -> 1, x < x -> 0, x != x -> 0 when x cannot be NaN; then comparisons intervals decide.
ScalarRef decided_comparison(const ir::Apply& a, const RuleEnv& env) {
  if (a.op != Op::Cmpeq && a.op != Op::Cmplt && a.op != Op::Cmpne) return nullptr;
  const DType c = ir::compute_dtype(a.dtype);
  if (c == DType::U4x32) return nullptr;
  const auto x = seen_interval(a.args[0], a.dtype, env);
  if (same_scalar(a.args[0], a.args[1]) && (is_int(c) || x))
    return a.op == Op::Cmpeq ? one_of(a.dtype) : zero_of(a.dtype);
  const auto y = seen_interval(a.args[1], a.dtype, env);
  if (!x || !y) return nullptr;
  const auto decided = decide_comparison(a.op, *x, *y);
  if (!decided) return nullptr;
  return *decided ? one_of(a.dtype) : zero_of(a.dtype);
}

// The truth (0/1 in d) of x: a predicate already is one.
ScalarRef truth_of(const ScalarRef& x, DType d) {
  const auto* ap = std::get_if<ir::Apply>(&x->node);
  if (ap && ir::op_is_predicate(ap->op)) return op_cast(x, d);
  return ir::apply(Op::Cmpne, d, {x, zero_of(d)});
}

// and(x, 1) -> truth(x), and(x, 0) -> 0, or(x, 0) -> truth(x), or(x, 1) -> 1 (either side):
// erases guard conjuncts that other rules proved true. The op tests its arguments converted to
// its compute dtype, so the constant is too: and:i32(x, 0.5) is 0.
ScalarRef decided_logic(const ir::Apply& a, const RuleEnv&) {
  if ((a.op != Op::And && a.op != Op::Or) || a.dtype == DType::U4x32) return nullptr;
  for (std::size_t k = 0; k < 2; ++k) {
    const auto c = constant_of(a.args[k]);
    if (!c || c->dtype == DType::U4x32) continue;
    const bool on = interp::is_nonzero(interp::convert(*c, ir::compute_dtype(a.dtype)));
    if (a.op == Op::And) return on ? truth_of(a.args[1 - k], a.dtype) : zero_of(a.dtype);
    return on ? one_of(a.dtype) : truth_of(a.args[1 - k], a.dtype);
  }
  return nullptr;
}

}  // namespace

const std::vector<RewriteRule>& simplify_rules() {
  static const std::vector<RewriteRule> rules = [] {
    std::vector<RewriteRule> r = {
        {"fold_constants", fold_constants},
        {"drop_projection", drop_projection},
        {"neutral_operand", neutral_operand},
        {"absorbing_zero", absorbing_zero},
        {"double_negation", double_negation},
        {"decided_comparison", decided_comparison},
        {"decided_where", decided_where},
        {"decided_logic", decided_logic},
    };
    for (auto& rule : algebra_rules()) r.push_back(std::move(rule));
    return r;
  }();
  return rules;
}

}  // namespace cannl::opt
