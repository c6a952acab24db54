#include <cmath>

#include "cannl/nn/optimizers.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"

namespace cannl::nn {
namespace {

using ir::Op;
using ir::RhsExpr;

ir::RhsExprRef ap(Op op, std::vector<ir::RhsExprRef> c) { return RhsExpr::apply(op, std::move(c)); }
ir::RhsExprRef lit(double v) { return RhsExpr::constant(v); }
ir::RhsExprRef arg(int i) { return RhsExpr::argument(i); }

/// lhs accum= expr(args) cell by cell.
ir::AsgnRef pointwise_update(const ir::NodeRef& lhs, Op accum, std::vector<ir::NodeRef> args,
                             ir::RhsExprRef expr) {
  ir::AccumOp op;
  op.lhs = lhs;
  op.accum = accum;
  for (auto& a : args) op.args.push_back(ir::Operand::of(std::move(a)));
  op.projections = identity_projections(lhs->dims, static_cast<int>(op.args.size()));
  op.expr = std::move(expr);
  return ir::make_accum(std::move(op));
}

void validate(const SgdOptions& o) {
  auto bad = [](double v) { return !std::isfinite(v) || v < 0; };
  if (bad(o.lr) || bad(o.momentum) || bad(o.weight_decay))
    throw RuntimeUsageError("sgd: lr, momentum and weight_decay must be finite and >= 0 (lr=" +
                            std::to_string(o.lr) + ", momentum=" + std::to_string(o.momentum) +
                            ", weight_decay=" + std::to_string(o.weight_decay) + ")");
  if (o.nesterov && o.momentum == 0)
    throw RuntimeUsageError("sgd: nesterov needs momentum > 0");
}

}  // namespace

OptimizerCode sgd(const std::vector<Tensor>& params, const SgdOptions& o) {
  validate(o);
  resolve_shapes(params);
  OptimizerCode code;
  for (const auto& p : params) {
    // args: 0 = grad, 1 = param (, 2 = momentum buffer)
    ir::RhsExprRef direction =
        o.weight_decay == 0 ? arg(0) : ap(Op::Add, {arg(0), ap(Op::Mul, {lit(o.weight_decay), arg(1)})});
    std::vector<ir::NodeRef> args = {p.grad(), p.value()};
    if (o.momentum > 0) {
      auto m = ir::make_node(p.label() + "_momentum", p.value()->dtype, p.value()->dims);
      ir::update_memory_mode(*m, ir::MemoryMode::Materialized, 61);  // persists across steps
      code.init.push_back(ir::make_fetch(m, ir::FetchConstant{0}));
      auto new_m = ap(Op::Add, {ap(Op::Mul, {lit(o.momentum), arg(2)}), direction});
      code.update.push_back(pointwise_update(m, Op::Arg2, {p.grad(), p.value(), m}, new_m));
      direction = o.nesterov ? ap(Op::Add, {direction, ap(Op::Mul, {lit(o.momentum), arg(2)})})
                             : arg(2);
      args.push_back(m);
    }
    code.update.push_back(
        pointwise_update(p.value(), Op::Sub, args, ap(Op::Mul, {lit(o.lr), direction})));
  }
  return code;
}

}  // namespace cannl::nn
