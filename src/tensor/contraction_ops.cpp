// Contractions, permutations, reductions and slices: operations whose projections come from a
// spec (or the compose / transpose logic) rather than pointwise broadcasting.
#include <algorithm>

#include "cannl/support/error.h"
#include "cannl/tensor/gradient_rule.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/precision_policy.h"

namespace cannl {
namespace {

using detail::a;
using detail::ap;
using detail::g;
using detail::lit;
using detail::t;
using ir::Op;

/// Spec that reduces every axis of the operand to a scalar.
constexpr const char* kReduceAll = "...|...->... => |->";

/// Accumulate `accum` over the product space of `op(args)`.
Tensor contraction(const std::string& label, std::vector<Tensor> args, shape::Logic logic,
                   Op accum, Op op, CodeBuilder backward) {
  detail::OpSpec spec;
  spec.label = label;
  spec.args = std::move(args);
  spec.logic = std::move(logic);
  spec.forward = [accum, op](const Tensor& self, const ir::Projections& p) {
    return std::vector<ir::AsgnRef>{detail::forward_assign(self, p, accum, op)};
  };
  spec.backward = std::move(backward);
  return detail::make_op(std::move(spec));
}

Tensor contraction(const std::string& label, std::vector<Tensor> args, shape::Logic logic,
                   Op accum, Op op, detail::GradientRule rule) {
  return contraction(label, std::move(args), std::move(logic), accum, op,
                     detail::backward_of(std::move(rule)));
}

/// `a` rounded onto the grid of the policy's format, kept in a's precision; the gradient passes
/// straight through. Its own tensor, so the rounding runs once per cell rather than once per
/// product, and the product itself stays a plain `d += a * b` nest that the CPU schedule can
/// tensorize (bitwise the same sums: rounding is idempotent and the products are exact).
Tensor rounded_operand(const Tensor& v, MatmulPrecision precision, Op rounding) {
  detail::OpSpec spec;
  spec.label = v.label() + "_" + std::string(PrecisionPolicy{precision}.name());  // w1_bf16
  spec.args = {v};
  // Exactly the operand's rows: a pointwise op's rows would take the batch axes the product
  // broadcasts to, and a weight's copy would be repeated for every row of the batch.
  spec.logic = shape::Einsum{"...|...->... => ...|...->..."};
  spec.forward = [rounding](const Tensor& self, const ir::Projections& p) {
    auto expr = ap(rounding, {detail::arg(0)});
    return std::vector<ir::AsgnRef>{detail::forward_assign(self, p, Op::Arg2, Op::Identity, expr)};
  };
  spec.backward = detail::backward_of({{g()}});
  Tensor rounded = detail::make_op(std::move(spec));
  // What lets a GPU run the product on tensor cores without re-rounding (TensorNode::rounded_to).
  rounded.value()->rounded_to = narrow_format(precision);
  return rounded;
}

/// The backward of a product of rounded operands: the incoming gradient rounded once into a
/// node of its own (same layout as the gradient), then both gradient products as plain nests.
CodeBuilder rounded_product_backward(MatmulPrecision precision, Op rounding) {
  return [precision, rounding](const Tensor& self, const ir::Projections& p) {
    std::vector<ir::AsgnRef> code;
    const ir::NodeRef& grad = self.grad();
    auto rounded = ir::make_node(grad->label + "_" + std::string(PrecisionPolicy{precision}.name()),
                                 grad->dtype, grad->dims);
    rounded->padding = grad->padding;
    rounded->pad_value = grad->pad_value;
    rounded->rounded_to = narrow_format(precision);
    ir::AccumOp round_grad;
    round_grad.lhs = rounded;
    round_grad.accum = Op::Arg2;
    round_grad.args = {ir::Operand::of(grad)};
    round_grad.projections = identity_projections(grad->dims, 1);
    round_grad.expr = ap(rounding, {detail::arg(0)});
    code.push_back(ir::make_accum(std::move(round_grad)));
    for (int k = 0; k < 2; ++k) {
      const Tensor& target = self.args()[static_cast<std::size_t>(k)];
      if (!target.requires_grad()) continue;
      code.push_back(detail::grad_assign(target.grad(), p, k,
                                         {{rounded, -1}, {self.args()[static_cast<std::size_t>(1 - k)].value(), 1 - k}},
                                         ap(Op::Mul, {detail::arg(0), detail::arg(1)})));
    }
    return code;
  };
}

}  // namespace

namespace detail {

Tensor sum_of_products(const std::string& label, std::vector<Tensor> args, shape::Logic logic) {
  const MatmulPrecision precision = current_precision_policy().matmul;
  const std::optional<Op> r = operand_rounding(precision);
  detail::OpSpec spec;
  spec.label = label;
  spec.logic = std::move(logic);
  spec.forward = [](const Tensor& self, const ir::Projections& p) {
    return std::vector<ir::AsgnRef>{detail::forward_assign(self, p, Op::Add, Op::Mul)};
  };
  if (r) {
    for (auto& a : args) a = rounded_operand(a, precision, *r);
    spec.backward = rounded_product_backward(precision, *r);
  } else {
    spec.backward = detail::backward_of({{ap(Op::Mul, {g(), a(1)})}, {ap(Op::Mul, {g(), a(0)})}});
  }
  spec.args = std::move(args);
  Tensor result = detail::make_op(std::move(spec));
  result.impl().matmul_precision = precision;
  return result;
}

}  // namespace detail

namespace {

/// The reduction factor 1/N of a mean: N = the iterations summed into each result cell, the
/// product of the extents of the iterators the result's indices do not mention. (Not the
/// ratio of element counts: a diagonal `ii=>i`, a fixed index `i0=>i` or a stride `2*i=>i`
/// reads fewer operand cells than the operand holds.)
double mean_factor(const ir::Projections& p) {
  double n = 1;
  for (std::size_t i = 0; i < p.product_iterators.size(); ++i) {
    const ir::Symbol s = p.product_iterators[i];
    const bool kept = std::any_of(p.project_lhs.begin(), p.project_lhs.end(),
                                  [&](const ir::AxisIndex& a) { return a.mentions(s); });
    if (!kept) n *= static_cast<double>(p.product_space[i]);
  }
  return 1.0 / n;
}

Tensor mean_with(const Tensor& v, const std::string& spec_text) {
  detail::OpSpec spec;
  spec.label = "mean";
  spec.args = {v};
  spec.logic = shape::Einsum{spec_text};
  spec.forward = [](const Tensor& self, const ir::Projections& p) {
    auto expr = ap(Op::Mul, {detail::arg(0), lit(mean_factor(p))});
    return std::vector<ir::AsgnRef>{detail::forward_assign(self, p, Op::Add, Op::Identity, expr)};
  };
  spec.backward = [](const Tensor& self, const ir::Projections& p) {
    auto rule = detail::backward_of({{ap(Op::Mul, {g(), lit(mean_factor(p))})}});
    return rule(self, p);
  };
  return detail::make_op(std::move(spec));
}

}  // namespace

Tensor operator*(const Tensor& l, const Tensor& r) {
  return detail::sum_of_products("matmul", {l, r}, shape::Compose{});
}
Tensor transpose(const Tensor& v) {
  return contraction("transpose", {v}, shape::Transpose{}, Op::Arg2, Op::Identity, {{g()}});
}
Tensor einsum(const std::string& spec, const Tensor& l, const Tensor& r) {
  return detail::sum_of_products("einsum", {l, r}, shape::Einsum{spec});
}
Tensor einsum(const std::string& spec, const Tensor& v) {
  return contraction("einsum", {v}, shape::Einsum{spec}, Op::Add, Op::Identity, {{g()}});
}
Tensor einmax(const std::string& spec, const Tensor& v) {
  // Every position equal to the maximum receives the gradient (ties included).
  return contraction("einmax", {v}, shape::Einsum{spec}, Op::Max, Op::Identity,
                     {{ap(Op::Where, {ap(Op::Cmpeq, {t(), a(0)}), g(), lit(0)})}});
}
Tensor einmax(const std::string& spec, const Tensor& l, const Tensor& r) {
  // The product as t stores it: a narrow t holds max(a0 * a1) rounded (detail::as_stored).
  auto rule = [](ir::DType dtype) -> detail::GradientRule {
    auto is_max = ap(Op::Cmpeq, {t(), detail::as_stored(ap(Op::Mul, {a(0), a(1)}), dtype)});
    return {{ap(Op::Where, {is_max, ap(Op::Mul, {g(), a(1)}), lit(0)})},
            {ap(Op::Where, {is_max, ap(Op::Mul, {g(), a(0)}), lit(0)})}};
  };
  return contraction("einmax", {l, r}, shape::Einsum{spec}, Op::Max, Op::Mul,
                     detail::backward_of(rule));
}

Tensor sum(const Tensor& v) { return einsum(kReduceAll, v); }
Tensor mean(const Tensor& v) { return mean_with(v, kReduceAll); }
Tensor max(const Tensor& v) { return einmax(kReduceAll, v); }
Tensor sum(const Tensor& v, const std::string& spec) { return einsum(spec, v); }
Tensor mean(const Tensor& v, const std::string& spec) { return mean_with(v, spec); }
Tensor max(const Tensor& v, const std::string& spec) { return einmax(spec, v); }

Tensor slice_batch(const Tensor& v, const ir::StaticSymbol& index) {
  Tensor sliced = contraction("slice_" + v.label(), {v}, shape::BatchSlice{index}, Op::Arg2,
                               Op::Identity, {{g()}});
  sliced.impl().static_index = index;
  return sliced;
}

}  // namespace cannl
