#include "nn/update_util.h"

#include "cannl/tensor/autodiff.h"

namespace cannl::nn::detail {
namespace {
bool is_broadcast_scalar(const ir::NodeRef& arg, const std::vector<std::int64_t>& dims) {
  return arg->dims == std::vector<std::int64_t>{1} && dims != arg->dims;
}
}  // namespace

ir::AsgnRef elementwise(const ir::NodeRef& lhs, ir::Op accum, const std::vector<ir::NodeRef>& args,
                        ir::RhsExprRef expr) {
  ir::AccumOp op;
  op.lhs = lhs;
  op.accum = accum;
  op.projections = identity_projections(lhs->dims, static_cast<int>(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    op.args.push_back(ir::Operand::of(args[i]));
    if (is_broadcast_scalar(args[i], lhs->dims)) {
      op.projections.rhs_dims[i] = {1};
      op.projections.project_rhs[i] = {ir::AxisIndex::fixed(0)};
    }
  }
  op.expr = std::move(expr);
  return ir::make_accum(std::move(op));
}

ir::AsgnRef reduce_to_scalar(const ir::NodeRef& lhs, const std::vector<ir::NodeRef>& args,
                             ir::RhsExprRef expr) {
  ir::AccumOp op;
  op.lhs = lhs;
  op.accum = ir::Op::Add;
  op.projections = identity_projections(args.at(0)->dims, static_cast<int>(args.size()));
  op.projections.lhs_dims = {1};
  op.projections.project_lhs = {ir::AxisIndex::fixed(0)};
  op.projections.debug = "reduce to scalar";
  for (const auto& a : args) op.args.push_back(ir::Operand::of(a));
  op.expr = std::move(expr);
  return ir::make_accum(std::move(op));
}

ir::NodeRef state_buffer(const std::string& name, ir::DType dtype,
                         const std::vector<std::int64_t>& dims, int provenance) {
  auto node = ir::make_node(name, dtype, dims);
  ir::update_memory_mode(*node, ir::MemoryMode::Materialized, provenance);
  return node;
}

}  // namespace cannl::nn::detail
