// Adam / AdamW as assignments (include/cannl/nn/adam.h), in the style of sgd.cpp.
#include "cannl/nn/adam.h"

#include <cmath>

#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "nn/update_util.h"

namespace cannl::nn {
namespace {

using detail::ap;
using detail::arg;
using detail::lit;
using ir::Op;

void validate(const AdamOptions& o) {
  auto beta_ok = [](double b) { return std::isfinite(b) && b >= 0 && b < 1; };
  if (!beta_ok(o.beta1) || !beta_ok(o.beta2))
    throw RuntimeUsageError("adam: beta1 and beta2 must lie in [0, 1) (beta1=" +
                            std::to_string(o.beta1) + ", beta2=" + std::to_string(o.beta2) + ")");
  if (!(o.eps >= 0) || !(o.weight_decay >= 0) || !std::isfinite(o.weight_decay))
    throw RuntimeUsageError("adam: eps and weight_decay must be finite and >= 0 (eps=" +
                            std::to_string(o.eps) + ", weight_decay=" +
                            std::to_string(o.weight_decay) + ")");
  if (o.weight_decay_min_rank < 0)
    throw RuntimeUsageError("adam: weight_decay_min_rank must be >= 0 (got " +
                            std::to_string(o.weight_decay_min_rank) + ")");
  validate_schedule(o.schedule);
}

/// The options of one parameter: no weight decay when it has fewer axes than the minimum rank.
AdamOptions options_for(const AdamOptions& o, const Tensor& p) {
  AdamOptions mine = o;
  if (std::ssize(p.value()->dims) < o.weight_decay_min_rank) mine.weight_decay = 0;
  return mine;
}

// Operand order of every per-parameter update: 0 grad, 1 param, 2 m, 3 v, 4 step,
// 5 step size lr_t / (1 - b1^t), 6 sqrt(1 - b2^t).
ir::RhsExprRef gradient(const AdamOptions& o) {
  if (o.decoupled || o.weight_decay == 0) return arg(0);
  return ap(Op::Add, {arg(0), ap(Op::Mul, {lit(o.weight_decay), arg(1)})});
}

/// step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
ir::RhsExprRef adam_delta(const AdamOptions& o) {
  auto denom = ap(Op::Add, {ap(Op::Div, {ap(Op::Sqrt, {arg(3)}), arg(6)}), lit(o.eps)});
  return ap(Op::Mul, {arg(5), ap(Op::Div, {arg(2), denom})});
}

/// The per-step scalars of the bias correction, computed in f64 (their lhs dtype): in f32,
/// 1 - 0.999^t loses about 1e-5 of relative precision to cancellation, an error every update
/// would carry.
struct BiasCorrection {
  ir::NodeRef step_size;   // lr_t / (1 - b1^t)
  ir::NodeRef sqrt_c2;     // sqrt(1 - b2^t)
};

BiasCorrection bias_correction(const AdamOptions& o, const ir::NodeRef& step,
                               OptimizerCode& code) {
  BiasCorrection c{detail::state_buffer("adam_step_size", ir::DType::F64, {1}, 62),
                   detail::state_buffer("adam_sqrt_correction2", ir::DType::F64, {1}, 62)};
  auto t = arg(0);
  auto correction = [&](double beta) { return ap(Op::Sub, {lit(1), ap(Op::Pow, {lit(beta), t})}); };
  for (const auto& node : {c.step_size, c.sqrt_c2})
    code.init.push_back(ir::make_fetch(node, ir::FetchConstant{0}));
  code.update.push_back(detail::elementwise(
      c.step_size, Op::Arg2, {step}, ap(Op::Div, {schedule_expr(o.schedule, t), correction(o.beta1)})));
  code.update.push_back(
      detail::elementwise(c.sqrt_c2, Op::Arg2, {step}, ap(Op::Sqrt, {correction(o.beta2)})));
  return c;
}

}  // namespace

AdamCode adam(const std::vector<Tensor>& params, const AdamOptions& options) {
  validate(options);
  resolve_shapes(params);
  AdamCode result;
  result.step = detail::state_buffer("adam_step", ir::DType::F32, {1}, 62);
  result.code.init.push_back(ir::make_fetch(result.step, ir::FetchConstant{0}));
  result.code.update.push_back(detail::elementwise(result.step, Op::Add, {}, lit(1)));
  const BiasCorrection correction = bias_correction(options, result.step, result.code);
  for (const auto& p : params) {
    const AdamOptions o = options_for(options, p);
    const auto& dims = p.value()->dims;
    const ir::DType dtype = p.value()->dtype;
    auto m = detail::state_buffer(p.label() + "_adam_m", dtype, dims, 62);
    auto v = detail::state_buffer(p.label() + "_adam_v", dtype, dims, 62);
    result.m.push_back(m);
    result.v.push_back(v);
    result.code.init.push_back(ir::make_fetch(m, ir::FetchConstant{0}));
    result.code.init.push_back(ir::make_fetch(v, ir::FetchConstant{0}));
    const std::vector<ir::NodeRef> args = {p.grad(), p.value(), m, v, result.step,
                                           correction.step_size, correction.sqrt_c2};
    auto& update = result.code.update;
    if (o.decoupled && o.weight_decay > 0)  // AdamW: p *= 1 - lr_t * wd, before the moments
      update.push_back(detail::elementwise(
          p.value(), Op::Sub, args,
          ap(Op::Mul, {ap(Op::Mul, {schedule_expr(o.schedule, arg(4)), lit(o.weight_decay)}), arg(1)})));
    auto g = gradient(o);
    update.push_back(detail::elementwise(
        m, Op::Arg2, args,
        ap(Op::Add, {ap(Op::Mul, {lit(o.beta1), arg(2)}), ap(Op::Mul, {lit(1 - o.beta1), g})})));
    update.push_back(detail::elementwise(
        v, Op::Arg2, args,
        ap(Op::Add, {ap(Op::Mul, {lit(o.beta2), arg(3)}), ap(Op::Mul, {lit(1 - o.beta2), ap(Op::Mul, {g, g})})})));
    update.push_back(detail::elementwise(p.value(), Op::Sub, args, adam_delta(o)));
  }
  return result;
}

}  // namespace cannl::nn
