// Algebraic rules of the simplifier: constants to the right, re-association of constants, float
// division rewrites, integer powers and FMA formation. Exact ones are always on; the ones that
// change float roundings need a SimplifyOptions licence (rewrite_rule.h).
//
// Only the non-narrow dtypes qualify: a narrow-float op rounds its result, so regrouping two of
// them would drop an intermediate rounding.
#include <cmath>

#include "cannl/interp/scalar_semantics.h"
#include "rewrite_rule.h"

namespace cannl::opt {

using ir::DType;
using ir::Op;
using ir::ScalarRef;

namespace {

bool plain(DType d) { return d != DType::U4x32 && ir::compute_dtype(d) == d; }
bool is_int(DType d) { return d != DType::U4x32 && !ir::is_float(d); }
bool is_const(const ScalarRef& x) { return constant_of(x).has_value(); }

// The Apply `x` is when it is op `op` of dtype `d`.
const ir::Apply* apply_of(const ScalarRef& x, Op op, DType d) {
  const auto* ap = std::get_if<ir::Apply>(&x->node);
  return ap && ap->op == op && ap->dtype == d ? ap : nullptr;
}

ScalarRef fold(Op op, DType d, const ScalarRef& x, const ScalarRef& y) {
  const interp::Value args[] = {*constant_of(x), *constant_of(y)};
  return scalar_of(interp::apply_op(op, d, args));
}

// c + x -> x + c and c * x -> x * c: IEEE addition and multiplication commute exactly.
ScalarRef constant_to_right(const ir::Apply& a, const RuleEnv&) {
  if ((a.op != Op::Add && a.op != Op::Mul) || a.dtype == DType::U4x32) return nullptr;
  if (!is_const(a.args[0]) || is_const(a.args[1])) return nullptr;
  return ir::apply(a.op, a.dtype, {a.args[1], a.args[0]});
}

// x - c -> x + (-c): exact in IEEE arithmetic (subtraction is addition of the negation) and in
// wrapping integer arithmetic; it lets add chains re-associate.
ScalarRef subtract_constant(const ir::Apply& a, const RuleEnv&) {
  if (a.op != Op::Sub || !plain(a.dtype) || !is_const(a.args[1]) || is_const(a.args[0])) return nullptr;
  const interp::Value c[] = {*constant_of(a.args[1])};
  return ir::apply(Op::Add, a.dtype, {a.args[0], scalar_of(interp::apply_op(Op::Neg, a.dtype, c))});
}

// (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2): always for integers (a wrapping
// ring), for floats only with reassociate_floats.
ScalarRef reassociate_constants(const ir::Apply& a, const RuleEnv& env) {
  if ((a.op != Op::Add && a.op != Op::Mul) || !plain(a.dtype) || !is_const(a.args[1])) return nullptr;
  if (!is_int(a.dtype) && !env.options.reassociate_floats) return nullptr;
  const ir::Apply* inner = apply_of(a.args[0], a.op, a.dtype);
  if (!inner || !is_const(inner->args[1]) || is_const(inner->args[0])) return nullptr;
  return ir::apply(a.op, a.dtype, {inner->args[0], fold(a.op, a.dtype, inner->args[1], a.args[1])});
}

// x / c -> x * (1/c) when c = ±2^k and 1/c is a normal number: both round the same exact real.
ScalarRef divide_by_power_of_two(const ir::Apply& a, const RuleEnv&) {
  if (a.op != Op::Div || !plain(a.dtype) || !ir::is_float(a.dtype)) return nullptr;
  const auto c = constant_of(a.args[1]);
  if (!c) return nullptr;
  const double v = interp::convert(interp::convert(*c, a.dtype), DType::F64).get<double>();
  int exponent = 0;
  if (!std::isnormal(v) || std::abs(std::frexp(v, &exponent)) != 0.5) return nullptr;
  const interp::Value r = interp::convert(interp::Value::of(1.0 / v), a.dtype);
  const double back = interp::convert(r, DType::F64).get<double>();
  if (!std::isnormal(back) || back * v != 1.0) return nullptr;
  return ir::apply(Op::Mul, a.dtype, {a.args[0], scalar_of(r)});
}

// (a / b) / c -> a / (b * c), floats only, licensed. The 0.8 regression rewrote it to
// (a * c) / b, which is wrong; simplify_test.cpp pins the right form and its value.
ScalarRef divide_of_divide(const ir::Apply& a, const RuleEnv& env) {
  if (a.op != Op::Div || !plain(a.dtype) || !ir::is_float(a.dtype)) return nullptr;
  if (!env.options.reassociate_floats) return nullptr;
  const ir::Apply* inner = apply_of(a.args[0], Op::Div, a.dtype);
  if (!inner) return nullptr;
  const ScalarRef denominator = ir::apply(Op::Mul, a.dtype, {inner->args[1], op_cast(a.args[1], a.dtype)});
  return ir::apply(Op::Div, a.dtype, {inner->args[0], denominator});
}

bool cheap_to_repeat(const ScalarRef& x) {
  return std::holds_alternative<ir::Get>(x->node) || std::holds_alternative<ir::GetLocal>(x->node) ||
         std::holds_alternative<ir::EmbedIndex>(x->node);
}

// pow(x, n) for a constant integer n: n = 0 -> 1 and n = 1 -> x are exact (pow's special cases).
// Other n in [-4, 4] unroll to multiplications (and a reciprocal) only with reassociate_floats:
// even n = 2 is not exact, since libm's powf is not correctly rounded (glibc's powf(1 + 2^-12, 2)
// rounds the tie x*x breaks to even the other way), and the backends call powf.
ScalarRef unroll_integer_power(const ir::Apply& a, const RuleEnv& env) {
  if (a.op != Op::Pow || !plain(a.dtype) || !ir::is_float(a.dtype)) return nullptr;
  const auto c = constant_of(a.args[1]);
  if (!c) return nullptr;
  const double n = interp::convert(interp::convert(*c, a.dtype), DType::F64).get<double>();
  if (n != std::trunc(n) || std::abs(n) > 4) return nullptr;
  const ScalarRef x = op_cast(a.args[0], a.dtype);
  if (n == 0) return scalar_of(interp::convert(interp::Value::of(1.0), a.dtype));
  if (n == 1) return x;
  if (!env.options.reassociate_floats || !cheap_to_repeat(a.args[0])) return nullptr;
  ScalarRef product = x;
  for (int k = 1; k < static_cast<int>(std::abs(n)); ++k) product = ir::apply(Op::Mul, a.dtype, {product, x});
  if (n > 0) return product;
  return ir::apply(Op::Div, a.dtype, {scalar_of(interp::convert(interp::Value::of(1.0), a.dtype)), product});
}

// a + b*c -> fma(b, c, a), licensed (one rounding instead of two; the interpreter's fma and the
// C backend's fma/fmaf agree with each other, not with the unfused form).
ScalarRef form_fma(const ir::Apply& a, const RuleEnv& env) {
  if (a.op != Op::Add || !plain(a.dtype) || !ir::is_float(a.dtype) || !env.options.fuse_multiply_add)
    return nullptr;
  for (std::size_t k = 0; k < 2; ++k) {
    const ir::Apply* m = apply_of(a.args[k], Op::Mul, a.dtype);
    if (!m) continue;
    return ir::apply(Op::Fma, a.dtype,
                     {op_cast(m->args[0], a.dtype), op_cast(m->args[1], a.dtype), a.args[1 - k]});
  }
  return nullptr;
}

}  // namespace

std::vector<RewriteRule> algebra_rules() {
  return {
      {"constant_to_right", constant_to_right},
      {"subtract_constant", subtract_constant},
      {"reassociate_constants", reassociate_constants},
      {"divide_by_power_of_two", divide_by_power_of_two},
      {"divide_of_divide", divide_of_divide},
      {"unroll_integer_power", unroll_integer_power},
      {"form_fma", form_fma},
  };
}

}  // namespace cannl::opt
