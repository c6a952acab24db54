// Parameter initialization from a counter-based threefry stream (semantics-frontend.md 5.5).
//
// Each cell's random bits are threefry(key, cell offset) with key derived from the `seed` config
// key and the parameter's name, so values depend on neither construction order nor global state.
#include <cmath>
#include <numbers>

#include "cannl/support/config.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/op_builder.h"

namespace cannl {
namespace {

using detail::ap;
using detail::lit;
using ir::Op;

/// 53-bit key (exact as a double constant) mixing the seed and the parameter name (FNV-1a).
double threefry_key(const std::string& name, int stream) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  h ^= static_cast<std::uint64_t>(config::get_int("seed")) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<std::uint64_t>(stream) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<double>(h & ((1ull << 53) - 1));
}

ir::RhsExprRef uniform01(const std::string& name, int stream) {
  const Op variant = detail::default_prng_op();
  return ap(Op::Uniform1, {ap(variant, {lit(threefry_key(name, stream)), detail::arg(0)})});
}

ir::RhsExprRef uniform_between(const std::string& name, double low, double high) {
  return ap(Op::Add, {ap(Op::Mul, {uniform01(name, 0), lit(high - low)}), lit(low)});
}

/// Box-Muller: sqrt(-2 log(u1 + eps (1 - u1))) * cos(2 pi u2), eps = 2^-24 keeps log finite.
ir::RhsExprRef standard_normal(const std::string& name) {
  const double eps = std::ldexp(1.0, -24);
  auto u1 = uniform01(name, 0);
  auto u2 = uniform01(name, 1);
  auto safe_u1 = ap(Op::Add, {u1, ap(Op::Mul, {lit(eps), ap(Op::Sub, {lit(1), u1})})});
  auto radius = ap(Op::Sqrt, {ap(Op::Mul, {lit(-2), ap(Op::Log, {safe_u1})})});
  return ap(Op::Mul, {radius, ap(Op::Cos, {ap(Op::Mul, {lit(2 * std::numbers::pi), u2})})});
}

double product(const std::vector<std::int64_t>& dims) {
  double n = 1;
  for (auto d : dims) n *= static_cast<double>(d);
  return n;
}

ir::RhsExprRef init_expr(const Tensor& p) {
  const Init& init = p.impl().init;
  const std::string& name = p.label();
  const double fan_in = product(shape::row_dims(*p.shape(), shape::RowKind::Input));
  const double fan_out = product(shape::row_dims(*p.shape(), shape::RowKind::Output));
  switch (init.kind) {
    case InitKind::Uniform: return uniform_between(name, init.low, init.high);
    case InitKind::Normal: return ap(Op::Mul, {standard_normal(name), lit(init.stddev)});
    case InitKind::Kaiming: {
      const double bound = std::sqrt(init.scale_sq / std::max(1.0, fan_in));
      return uniform_between(name, -bound, bound);
    }
    case InitKind::Xavier: {
      const double bound = std::sqrt(init.scale_sq / std::max(1.0, fan_in + fan_out));
      return uniform_between(name, -bound, bound);
    }
    case InitKind::Constant: return lit(init.value);
  }
  return lit(0);
}

}  // namespace

ir::Comp init_params_code(const std::vector<Tensor>& params) {
  resolve_shapes(params);
  std::vector<ir::AsgnRef> body;
  for (const auto& p : params) {
    // The cells the parameter holds, without the margins of a padded convolution reading it:
    // lowering offsets the writes by the left margins, and the margins keep their zero fill.
    // The counter runs over these cells alone, so padding never changes the initial values.
    const auto dims = p.value()->logical_dims();
    auto counter = ir::make_node(p.label() + "_counter", ir::DType::U4x32, dims);
    body.push_back(ir::make_fetch(counter, ir::FetchRangeOverOffsets{}));
    ir::AccumOp op;
    op.lhs = p.value();
    op.accum = Op::Arg2;
    op.initialize_neutral = true;
    op.args = {ir::Operand::of(counter)};
    op.projections = identity_projections(dims, 1);
    op.expr = init_expr(p);
    body.push_back(ir::make_accum(std::move(op)));
  }
  ir::Comp comp;
  comp.body.push_back(ir::make_block("init params", std::move(body)));
  return comp;
}

}  // namespace cannl
