// Primitive ops of the nn blocks with hand-written, fused gradient rules (include/cannl/nn/ops.h).
// They are built like every tensor op, through the tensor layer's op-building interface: a shape
// step, a forward CodeBuilder and a gradient rule over (g, t, a_i) (cannl/tensor/gradient_rule.h).
#include "cannl/nn/ops.h"

#include <cmath>
#include <numbers>

#include "cannl/tensor/gradient_rule.h"

namespace cannl::nn {
namespace {

using detail::a;
using detail::ap;
using detail::g;
using detail::lit;
using ir::Op;

ir::RhsExprRef x(int i) { return detail::arg(i); }

/// An op accumulating `forward_expr` over the product space of `spec` with `accum`.
Tensor fused_op(const std::string& label, std::vector<Tensor> args, shape::Logic logic, Op accum,
                ir::RhsExprRef forward_expr, detail::GradientRule rule) {
  detail::OpSpec spec;
  spec.label = label;
  spec.args = std::move(args);
  spec.logic = std::move(logic);
  spec.forward = [accum, forward_expr](const Tensor& self, const ir::Projections& p) {
    return std::vector<ir::AsgnRef>{
        detail::forward_assign(self, p, accum, Op::Identity, forward_expr)};
  };
  if (!rule.empty()) spec.backward = detail::backward_of(std::move(rule));
  return detail::make_op(std::move(spec));
}

constexpr double kGeluCubic = 0.044715;

/// sqrt(2/pi) (v + 0.044715 v^3) for an expression v.
ir::RhsExprRef gelu_inner(const ir::RhsExprRef& v) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  auto cube = ap(Op::Mul, {v, ap(Op::Mul, {v, v})});
  return ap(Op::Mul, {lit(c), ap(Op::Add, {v, ap(Op::Mul, {lit(kGeluCubic), cube})})});
}

}  // namespace

Tensor gelu(const Tensor& input) {
  auto th_fwd = ap(Op::Tanh, {gelu_inner(x(0))});
  auto forward = ap(Op::Mul, {ap(Op::Mul, {lit(0.5), x(0)}), ap(Op::Add, {lit(1), th_fwd})});
  // d/dv = 0.5 (1 + th) + 0.5 v (1 - th^2) sqrt(2/pi) (1 + 3 * 0.044715 v^2)
  const double c = std::sqrt(2.0 / std::numbers::pi);
  auto th = ap(Op::Tanh, {gelu_inner(a(0))});
  auto sech2 = ap(Op::Sub, {lit(1), ap(Op::Mul, {th, th})});
  auto inner_slope =
      ap(Op::Add, {lit(c), ap(Op::Mul, {lit(3 * kGeluCubic * c), ap(Op::Mul, {a(0), a(0)})})});
  auto slope = ap(Op::Add, {ap(Op::Mul, {lit(0.5), ap(Op::Add, {lit(1), th})}),
                            ap(Op::Mul, {ap(Op::Mul, {lit(0.5), a(0)}), ap(Op::Mul, {sech2, inner_slope})})});
  return fused_op("gelu", {input}, shape::Pointwise{}, Op::Arg2, forward,
                  {{ap(Op::Mul, {g(), slope})}});
}

Tensor sum_exp_shifted(const Tensor& logits, const Tensor& row_max) {
  return fused_op("sum_exp_shifted", {logits, row_max},
                  shape::Einsum{"...|...->...; ...|...-> => ...|...->"}, Op::Add,
                  ap(Op::Exp, {ap(Op::Sub, {x(0), x(1)})}), {});
}

Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, const Tensor& row_max,
                          const Tensor& log_sum, const Tensor& target_sum) {
  // args: 0 logits, 1 targets, 2 row_max, 3 log_sum, 4 target_sum. Every logit enters shifted by
  // its row's max, never beside max + log_sum: that sum would round to an ulp of |max| (6e-5 at
  // 1000), and the loss and softmax would inherit that error however small the row's spread.
  auto forward = ap(Op::Mul, {x(1), ap(Op::Sub, {x(3), ap(Op::Sub, {x(0), x(2)})})});
  auto shifted = ap(Op::Sub, {a(0), a(2)});
  auto softmax = ap(Op::Exp, {ap(Op::Sub, {shifted, a(3)})});
  auto grad_logits = ap(Op::Mul, {g(), ap(Op::Sub, {ap(Op::Mul, {a(4), softmax}), a(1)})});
  auto grad_targets = ap(Op::Mul, {g(), ap(Op::Sub, {a(3), shifted})});
  return fused_op("cross_entropy_rows", {logits, targets, row_max, log_sum, target_sum},
                  shape::Einsum{"...|...->...; ...|...->...; ...|...->; ...|...->; ...|...-> => ...|...->"},
                  Op::Add, forward, {{grad_logits}, {grad_targets}, {nullptr}, {nullptr}, {nullptr}});
}

}  // namespace cannl::nn
