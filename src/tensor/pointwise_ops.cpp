// Pointwise tensor operations and their gradient rules (semantics-frontend.md 5.3).
// Forward values are expressions over the arguments (x(i) = argument i); gradient rules are
// expressions over the gradient environment (g, t, a(i)), see gradient_rule.h.
#include <cmath>
#include <numbers>

#include "cannl/tensor/gradient_rule.h"

namespace cannl {
namespace {

using detail::a;
using detail::ap;
using detail::g;
using detail::lit;
using detail::t;
using ir::Op;

ir::RhsExprRef x(int i) { return detail::arg(i); }

/// A pointwise op whose value is `forward_expr` over its arguments.
Tensor pointwise(const std::string& label, std::vector<Tensor> args, ir::RhsExprRef forward_expr,
                 detail::GradientRule rule, bool differentiable = true,
                 std::optional<ir::DType> dtype = std::nullopt) {
  detail::OpSpec spec;
  spec.label = label;
  spec.args = std::move(args);
  spec.dtype = dtype;
  spec.logic = shape::Pointwise{};
  spec.forward = [forward_expr](const Tensor& self, const ir::Projections& p) {
    return std::vector<ir::AsgnRef>{
        detail::forward_assign(self, p, Op::Arg2, Op::Identity, forward_expr)};
  };
  if (differentiable) spec.backward = detail::backward_of(std::move(rule));
  return detail::make_op(std::move(spec));
}

Tensor unary(const std::string& label, const Tensor& x0, Op op, ir::RhsExprRef grad) {
  return pointwise(label, {x0}, ap(op, {x(0)}), {{grad}}, grad != nullptr);
}

Tensor binary(const std::string& label, const Tensor& x0, const Tensor& x1, Op op,
              detail::GradientRule rule) {
  const bool differentiable = !rule.empty();
  return pointwise(label, {x0, x1}, ap(op, {x(0), x(1)}), std::move(rule), differentiable);
}

}  // namespace

Tensor operator+(const Tensor& l, const Tensor& r) {
  return binary("add", l, r, Op::Add, {{g()}, {g()}});
}
Tensor operator-(const Tensor& l, const Tensor& r) {
  return binary("sub", l, r, Op::Sub, {{g()}, {g(), Op::Sub}});
}
Tensor pointmul(const Tensor& l, const Tensor& r) {
  return binary("mul", l, r, Op::Mul, {{ap(Op::Mul, {g(), a(1)})}, {ap(Op::Mul, {g(), a(0)})}});
}
Tensor operator/(const Tensor& l, const Tensor& r) {
  // d(l/r)/dr = -l/r^2 = -t/r
  return binary("div", l, r, Op::Div,
                {{ap(Op::Div, {g(), a(1)})},
                 {ap(Op::Div, {ap(Op::Mul, {g(), t()}), a(1)}), Op::Sub}});
}
Tensor operator-(const Tensor& v) { return neg(v); }
Tensor operator+(const Tensor& l, double r) { return l + constant(r); }
Tensor operator-(const Tensor& l, double r) { return l - constant(r); }
Tensor operator*(double l, const Tensor& r) { return pointmul(constant(l), r); }
Tensor operator-(double l, const Tensor& r) { return constant(l) - r; }

Tensor pow(const Tensor& v, double p) {
  ir::RhsExprRef forward = p == 2.0 ? ap(Op::Mul, {x(0), x(0)}) : ap(Op::Pow, {x(0), lit(p)});
  // p == 0: v^0 is constant, so no gradient flows (the general rule g * 0 * v^-1 is NaN at v = 0).
  ir::RhsExprRef grad = p == 0.0   ? nullptr
                        : p == 2.0 ? ap(Op::Mul, {g(), ap(Op::Mul, {lit(2), a(0)})})
                        : p == 1.0 ? g()
                                   : ap(Op::Mul, {g(), ap(Op::Mul, {lit(p), ap(Op::Pow, {a(0), lit(p - 1)})})});
  return pointwise("pow", {v}, forward, {{grad}});
}

Tensor neg(const Tensor& v) { return unary("neg", v, Op::Neg, ap(Op::Neg, {g()})); }
Tensor relu(const Tensor& v) { return unary("relu", v, Op::Relu, ap(Op::ReluGate, {a(0), g()})); }
Tensor tanh(const Tensor& v) {
  return unary("tanh", v, Op::Tanh, ap(Op::Mul, {g(), ap(Op::Sub, {lit(1), ap(Op::Mul, {t(), t()})})}));
}
Tensor sigmoid(const Tensor& v) {
  auto forward = ap(Op::Recip, {ap(Op::Add, {lit(1), ap(Op::Exp, {ap(Op::Neg, {x(0)})})})});
  auto grad = ap(Op::Mul, {g(), ap(Op::Mul, {t(), ap(Op::Sub, {lit(1), t()})})});
  return pointwise("sigmoid", {v}, forward, {{grad}});
}
Tensor exp(const Tensor& v) { return unary("exp", v, Op::Exp, ap(Op::Mul, {g(), t()})); }
Tensor log(const Tensor& v) { return unary("log", v, Op::Log, ap(Op::Div, {g(), a(0)})); }
Tensor sqrt(const Tensor& v) {
  return unary("sqrt", v, Op::Sqrt, ap(Op::Mul, {lit(0.5), ap(Op::Div, {g(), t()})}));
}
Tensor sin(const Tensor& v) {
  return unary("sin", v, Op::Sin, ap(Op::Mul, {g(), ap(Op::Cos, {a(0)})}));
}
Tensor cos(const Tensor& v) {
  return unary("cos", v, Op::Cos, ap(Op::Neg, {ap(Op::Mul, {g(), ap(Op::Sin, {a(0)})})}));
}
Tensor recip(const Tensor& v) {
  return unary("recip", v, Op::Recip, ap(Op::Neg, {ap(Op::Mul, {g(), ap(Op::Mul, {t(), t()})})}));
}

Tensor max(const Tensor& l, const Tensor& r) {
  // Ties send the gradient to the left argument only, so it is counted once.
  auto left_smaller = ap(Op::Cmplt, {a(0), a(1)});
  return binary("max", l, r, Op::Max,
                {{ap(Op::Where, {left_smaller, lit(0), g()})},
                 {ap(Op::Where, {left_smaller, g(), lit(0)})}});
}
Tensor min(const Tensor& l, const Tensor& r) {
  auto right_smaller = ap(Op::Cmplt, {a(1), a(0)});
  return binary("min", l, r, Op::Min,
                {{ap(Op::Where, {right_smaller, lit(0), g()})},
                 {ap(Op::Where, {right_smaller, g(), lit(0)})}});
}
Tensor where(const Tensor& c, const Tensor& l, const Tensor& r) {
  return pointwise("where", {c, l, r}, ap(Op::Where, {x(0), x(1), x(2)}),
                   {{nullptr},
                    {ap(Op::Where, {a(0), g(), lit(0)})},
                    {ap(Op::Where, {a(0), lit(0), g()})}});
}
Tensor lt(const Tensor& l, const Tensor& r) { return binary("lt", l, r, Op::Cmplt, {}); }
Tensor gt(const Tensor& l, const Tensor& r) {
  return pointwise("gt", {l, r}, ap(Op::Cmplt, {x(1), x(0)}), {}, false);
}
Tensor eq(const Tensor& l, const Tensor& r) { return binary("eq", l, r, Op::Cmpeq, {}); }
Tensor ne(const Tensor& l, const Tensor& r) { return binary("ne", l, r, Op::Cmpne, {}); }
Tensor stop_gradient(const Tensor& v) {
  return pointwise("stop_gradient", {v}, x(0), {}, false);
}

Tensor cast(const Tensor& v, ir::DType dtype) {
  if (v.value()->dtype == dtype) return v;
  // A cast to an integer dtype is piecewise constant (it truncates): no gradient flows through
  // it. Passing g straight through would also store g in an integer gradient node, truncated.
  return pointwise("cast", {v}, x(0), {{g()}}, ir::is_float(dtype), dtype);
}

}  // namespace cannl
