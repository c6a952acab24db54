// Helpers shared by the simplifier's rule tables (see rewrite_rule.h).
#include <cmath>

#include "alpha_equivalence.h"
#include "cannl/interp/scalar_semantics.h"
#include "rewrite_rule.h"

namespace cannl::opt {

using ir::DType;

std::optional<interp::Value> constant_of(const ir::ScalarRef& s) {
  if (!s) return std::nullopt;
  if (const auto* c = std::get_if<ir::Constant>(&s->node)) return interp::constant_value(c->value, c->dtype);
  if (const auto* c = std::get_if<ir::ConstantBits>(&s->node))
    return interp::constant_bits_value(c->bits, c->dtype);
  return std::nullopt;
}

// Integers go through ConstantBits so 64-bit values survive; constant_bits_value converts the
// i64 back to the dtype exactly (sign- or zero-extension undone by the C cast).
ir::ScalarRef scalar_of(const interp::Value& v) {
  if (v.dtype == DType::U4x32) return nullptr;
  if (ir::is_float(v.dtype)) {
    const double d = interp::convert(v, DType::F64).get<double>();
    return ir::constant(d, v.dtype);
  }
  const auto bits = static_cast<std::int64_t>(interp::convert(v, DType::U64).get<std::uint64_t>());
  return ir::constant_bits(bits, v.dtype);
}

ir::ScalarRef op_cast(const ir::ScalarRef& x, DType d) {
  if (ir::scalar_dtype(*x) == d) return x;
  return ir::apply(ir::Op::Identity, d, {x});
}

ir::ScalarRef store_cast(const ir::ScalarRef& x, DType d) {
  const DType from = ir::scalar_dtype(*x);
  if (from == d) return x;
  if (const auto v = constant_of(x)) return scalar_of(interp::convert(*v, d));
  // identity:d converts through compute_dtype(d); only for narrow d can that differ from a store.
  if (ir::compute_dtype(d) == d) return ir::apply(ir::Op::Identity, d, {x});
  const bool exact_in_f32 = from == DType::F32 || from == DType::F16 || from == DType::BF16 || from == DType::FP8;
  return exact_in_f32 ? ir::apply(ir::Op::Identity, d, {x}) : nullptr;
}

bool is_constant(const ir::ScalarRef& x, double value) {
  const auto v = constant_of(x);
  if (!v || v->dtype == DType::U4x32) return false;
  return interp::convert(*v, DType::F64).get<double>() == value;
}

bool same_scalar(const ir::ScalarRef& a, const ir::ScalarRef& b) { return a == b || alpha_equivalent(a, b); }

}  // namespace cannl::opt
