// Operations built on the extended einsum notation and their gradient rules. Concatenation
// specs lower to one assignment per block (sibling loops with offsets); their gradient scatters
// back with the same blocks, the written slot being the operand (semantics 4.3 Block/Rev_sides).
#include "cannl/tensor/einsum_ops.h"

#include "cannl/support/error.h"
#include "cannl/tensor/gradient_rule.h"

namespace cannl {
namespace {

using detail::a;
using detail::ap;
using detail::g;
using detail::lit;
using detail::t;
using ir::Op;

Tensor contraction(const std::string& label, std::vector<Tensor> args, const std::string& spec,
                   Op accum, Op op, CodeBuilder backward, ir::RhsExprRef expr = nullptr,
                   std::vector<shape::VariableRef> captures = {}) {
  detail::OpSpec s;
  s.label = label;
  s.args = std::move(args);
  s.logic = shape::Einsum{spec, std::move(captures)};
  s.forward = [accum, op, expr](const Tensor& self, const ir::Projections& p) {
    return std::vector<ir::AsgnRef>{detail::forward_assign(self, p, accum, op, expr)};
  };
  s.backward = std::move(backward);
  return detail::make_op(std::move(s));
}

Tensor contraction(const std::string& label, std::vector<Tensor> args, const std::string& spec,
                   Op accum, Op op, detail::GradientRule rule, ir::RhsExprRef expr = nullptr,
                   std::vector<shape::VariableRef> captures = {}) {
  return contraction(label, std::move(args), spec, accum, op, detail::backward_of(std::move(rule)),
                     std::move(expr), std::move(captures));
}

detail::GradientRule product_rule() {
  return {{ap(Op::Mul, {g(), a(1)})}, {ap(Op::Mul, {g(), a(0)})}};
}

/// Where the result equals the combination, gradient flows (ties included).
detail::GradientRule selected_rule(const ir::RhsExprRef& combined, std::vector<ir::RhsExprRef> local) {
  detail::GradientRule rule;
  for (auto& d : local)
    rule.push_back({ap(Op::Where, {ap(Op::Cmpeq, {t(), combined}), d, lit(0)})});
  return rule;
}

std::string conv_axis(const std::string& out, const std::string& ker, const ConvOptions& o) {
  if (o.stride < 1 || o.dilation < 1)
    throw ShapeError("convolution stride and dilation must be at least 1 (got stride " +
                     std::to_string(o.stride) + ", dilation " + std::to_string(o.dilation) + ")");
  return std::to_string(o.stride) + "*" + out + (o.padding ? "=+" : "<+") +
         std::to_string(o.dilation) + "*" + ker;
}

/// A constant window tensor (output axes `wh, ww`, no batch or input axes) filled with `value`.
Tensor window_of(std::int64_t window, double value) {
  if (window < 1) throw ShapeError("pooling window must be at least 1, got " + std::to_string(window));
  return literal("window", std::vector<double>(static_cast<std::size_t>(window * window), value),
                 {.batch = std::vector<std::int64_t>{}, .input = std::vector<std::int64_t>{},
                  .output = std::vector<std::int64_t>{window, window}});
}

std::string pool_spec(std::int64_t window, std::int64_t stride) {
  const std::string s = std::to_string(stride > 0 ? stride : window);
  return "...|" + s + "*h<+p, " + s + "*w<+q, c; |->p, q => ...|h, w, c";
}

/// Forward of a concatenation: the first block resets the result (cells no block writes keep
/// 0), the others store into their disjoint cells.
std::vector<ir::AsgnRef> concat_forward(const Tensor& self) {
  std::vector<ir::AsgnRef> code;
  const auto blocks = detail::step_blocks(self);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    int live = -1;
    for (std::size_t i = 0; i < blocks[b].live_rhs.size(); ++i)
      if (blocks[b].live_rhs[i]) live = live < 0 ? static_cast<int>(i) : -2;
    if (live < 0)
      throw ShapeError("Ambiguous indices in concatenation: a block of '" + blocks[b].projections.debug +
                       "' reads " + (live == -1 ? "no" : "several") + " operands");
    ir::AccumOp op;
    op.lhs = self.value();
    // Blocks write disjoint cells, so a later block may store, unless its projection sums
    // several iterations into one cell (an axis of its operand the result lacks): then it adds.
    op.accum = b == 0 || !blocks[b].projections.is_injective() ? Op::Add : Op::Arg2;
    op.initialize_neutral = b == 0;
    op.op = Op::Identity;
    for (const auto& arg : self.args()) op.args.push_back(ir::Operand::of(arg.value()));
    op.projections = blocks[b].projections;
    op.expr = detail::arg(live);
    code.push_back(ir::make_accum(std::move(op)));
  }
  return code;
}

std::vector<ir::AsgnRef> concat_backward(const Tensor& self) {
  std::vector<ir::AsgnRef> code;
  for (const auto& block : detail::step_blocks(self))
    for (std::size_t i = 0; i < block.live_rhs.size(); ++i) {
      const Tensor& target = self.args()[i];
      if (!block.live_rhs[i] || !target.requires_grad()) continue;
      code.push_back(detail::grad_assign(target.grad(), block.projections, static_cast<int>(i),
                                         {{self.grad(), -1}}, detail::arg(0)));
    }
  return code;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& kernel, const ConvOptions& o) {
  return detail::sum_of_products(
      "conv1d", {x, kernel},
      shape::Einsum{"...|" + conv_axis("o", "k", o) + ", c; |k, c -> f => ...|o, f"});
}

Tensor conv2d(const Tensor& x, const Tensor& kernel, const ConvOptions& o) {
  return detail::sum_of_products("conv2d", {x, kernel},
                                 shape::Einsum{"...|" + conv_axis("h", "kh", o) + ", " +
                                               conv_axis("w", "kw", o) +
                                               ", c; |kh, kw, c -> f => ...|h, w, f"});
}

Tensor max_pool2d(const Tensor& x, std::int64_t window, std::int64_t stride) {
  return tropical(pool_spec(window, stride), x, window_of(window, 0.0));
}

Tensor avg_pool2d(const Tensor& x, std::int64_t window, std::int64_t stride) {
  const double w = 1.0 / static_cast<double>(window * window);
  return contraction("avg_pool2d", {x, window_of(window, w)}, pool_spec(window, stride), Op::Add,
                     Op::Mul, product_rule());
}

Tensor concat(const std::string& spec, const std::vector<Tensor>& parts) {
  if (parts.empty()) throw ShapeError("concat needs at least one operand");
  detail::OpSpec s;
  s.label = "concat";
  s.args = parts;
  s.logic = shape::Einsum{spec};
  s.forward = [](const Tensor& self, const ir::Projections&) { return concat_forward(self); };
  s.backward = [](const Tensor& self, const ir::Projections&) { return concat_backward(self); };
  s.writes_concat_blocks = true;
  return detail::make_op(std::move(s));
}

Tensor concat(const std::vector<Tensor>& parts) {
  std::string lhs, rhs;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string label = "a" + std::to_string(i);
    rhs += (i ? "; " : "") + std::string("...|...->") + label + ", ...";
    lhs += (i ? "^" : "") + label;
  }
  if (parts.size() == 1) return concat(rhs + " => ...|...->a0, ...", parts);
  return concat(rhs + " => ...|...->" + lhs + ", ...", parts);
}

Tensor stack(const std::vector<Tensor>& parts) {
  std::vector<Tensor> unsqueezed;
  for (const auto& p : parts) unsqueezed.push_back(einsum("...|...->... => ...|...->0, ...", p));
  return concat(unsqueezed);
}

Tensor outer(const Tensor& l, const Tensor& r) {
  return contraction("outer", {l, r}, "...|...->i; ...|...->j => ...|...->i, j", Op::Add, Op::Mul,
                     product_rule());
}

Tensor batched_matmul(const Tensor& l, const Tensor& r) {
  return detail::sum_of_products("batched_matmul", {l, r},
                                 shape::Einsum{"...|..b.., i, j; ...|..b.., j, k => ...|..b.., i, k"});
}

Tensor diagonal(const Tensor& m) {
  return contraction("diagonal", {m}, "...|i, i => ...|i", Op::Add, Op::Identity, {{g()}});
}

Tensor trace(const Tensor& m) {
  return contraction("trace", {m}, "...|i, i => ...|", Op::Add, Op::Identity, {{g()}});
}

Tensor tropical(const std::string& spec, const Tensor& l, const Tensor& r) {
  // The sum as t stores it: a narrow t holds max(a0 + a1) rounded (detail::as_stored).
  auto rule = [](ir::DType dtype) {
    return selected_rule(detail::as_stored(ap(Op::Add, {a(0), a(1)}), dtype), {g(), g()});
  };
  return contraction("tropical", {l, r}, spec, Op::Max, Op::Add,
                     detail::backward_of(rule));
}

Tensor einsum3(const std::string& spec, const Tensor& x, const Tensor& y, const Tensor& z) {
  auto expr = ap(Op::Mul, {ap(Op::Mul, {detail::arg(0), detail::arg(1)}), detail::arg(2)});
  return contraction("einsum3", {x, y, z}, spec, Op::Add, Op::Mul,
                     {{ap(Op::Mul, {ap(Op::Mul, {g(), a(1)}), a(2)})},
                      {ap(Op::Mul, {ap(Op::Mul, {g(), a(0)}), a(2)})},
                      {ap(Op::Mul, {ap(Op::Mul, {g(), a(0)}), a(1)})}},
                     expr);
}

Tensor einsum(const std::string& spec, const Tensor& x, const Tensor& y,
              std::vector<shape::VariableRef> captures) {
  return detail::sum_of_products("einsum", {x, y}, shape::Einsum{spec, std::move(captures)});
}

Tensor einsum(const std::string& spec, const Tensor& x, std::vector<shape::VariableRef> captures) {
  return contraction("einsum", {x}, spec, Op::Add, Op::Identity, {{g()}}, nullptr, std::move(captures));
}

Tensor einmin(const std::string& spec, const Tensor& x) {
  return contraction("einmin", {x}, spec, Op::Min, Op::Identity, selected_rule(a(0), {g()}));
}

}  // namespace cannl
