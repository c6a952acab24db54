#include "cannl/tensor/op_builder.h"

#include <atomic>

#include "cannl/shape/einsum_spec.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::detail {

ir::Op default_prng_op() {
  return config::get_one_of<ir::Op>("default_prng_variant",
                                    {{"crypto", ir::Op::ThreefryCrypto}, {"light", ir::Op::ThreefryLight}});
}

int next_tensor_id() {
  static std::atomic<int> next{1};
  return next++;
}

bool is_current(const Tensor& t) { return t.shape()->generation == shape::generation(); }

void check_current(const Tensor& t) {
  if (is_current(t)) return;
  throw RuntimeUsageError("tensor '" + t.label() + "' was created before reset_tensor_state(): its shape and " +
                          "update step were cleared and their ids now name other tensors; build it again " +
                          "after the reset");
}

ir::Projections step_projections(const Tensor& t) {
  check_current(t);
  return shape::projections(t.impl().step_id);
}

std::vector<shape::Block> step_blocks(const Tensor& t) {
  check_current(t);
  return shape::block_projections(t.impl().step_id);
}

ir::DType default_dtype() {
  const std::string name = config::get("default_prec");
  if (auto t = ir::dtype_from_name(name)) return *t;
  if (name == "single") return ir::DType::F32;
  if (name == "double") return ir::DType::F64;
  throw ConfigError("config key 'default_prec' = '" + name + "' (from " +
                    config::source_of("default_prec") +
                    "): expected one of f64, f32, f16, bf16, fp8");
}

namespace {

ir::DType result_dtype(const OpSpec& spec) {
  if (spec.dtype) return *spec.dtype;
  std::optional<ir::DType> result;
  for (const auto& a : spec.args) {
    if (a.impl().top_down_dtype) continue;
    result = result ? ir::promote(*result, a.value()->dtype) : a.value()->dtype;
  }
  return result ? *result : default_dtype();
}

/// An op whose forward computes one block would read a concatenation spec's first block only
/// (other operands at index 0, the result's other cells unwritten): refused before it is built.
void refuse_concatenation(const OpSpec& spec) {
  const auto* einsum = std::get_if<shape::Einsum>(&spec.logic);
  if (einsum != nullptr && shape::has_concatenation(einsum->spec))
    throw EinsumSyntaxError(spec.label + " cannot take the concatenation spec '" + einsum->spec +
                            "': an axis with '^' needs concat (cannl::concat, cannl.concat), which "
                            "writes each of its blocks");
}

}  // namespace

Tensor make_op(OpSpec spec) {
  if (!spec.writes_concat_blocks) refuse_concatenation(spec);
  auto impl = std::make_shared<TensorImpl>();
  impl->id = next_tensor_id();
  impl->label = spec.label;
  impl->shape = shape::new_shape(spec.label);
  const ir::DType dtype = result_dtype(spec);
  impl->specified_dtype = spec.dtype;
  std::vector<shape::ShapeRef> operand_shapes;
  for (const auto& a : spec.args) {
    check_current(a);
    operand_shapes.push_back(a.shape());
  }
  impl->step_id = shape::propagate({spec.label, impl->shape, operand_shapes, spec.logic});
  impl->value = ir::make_node(spec.label, dtype);
  bool needs_grad = false;
  for (const auto& a : spec.args) needs_grad = needs_grad || a.requires_grad();
  if (needs_grad && spec.backward) {
    impl->grad = ir::make_node("grad_" + spec.label, dtype);
    impl->backward = std::move(spec.backward);
  }
  impl->forward = std::move(spec.forward);
  impl->args = std::move(spec.args);
  return Tensor(std::move(impl));
}

ir::Projections permuted(const ir::Projections& p, int target, const std::vector<int>& sources) {
  auto slot_index = [&](int slot) -> const std::vector<ir::AxisIndex>& {
    return slot < 0 ? p.project_lhs : p.project_rhs.at(slot);
  };
  auto slot_dims = [&](int slot) -> const std::vector<std::int64_t>& {
    return slot < 0 ? p.lhs_dims : p.rhs_dims.at(slot);
  };
  ir::Projections q;
  q.product_space = p.product_space;
  q.product_iterators = p.product_iterators;
  q.project_lhs = slot_index(target);
  q.lhs_dims = slot_dims(target);
  for (int s : sources) {
    q.project_rhs.push_back(slot_index(s));
    q.rhs_dims.push_back(slot_dims(s));
  }
  q.debug = p.debug.empty() ? "gradient" : "gradient of " + p.debug;
  return q;
}

ir::AsgnRef grad_assign(const ir::NodeRef& grad_target, const ir::Projections& p, int target,
                        const std::vector<SlotOperand>& operands, ir::RhsExprRef expr,
                        ir::Op accum) {
  std::vector<int> sources;
  ir::AccumOp op;
  op.lhs = grad_target;
  op.accum = accum;
  op.initialize_neutral = false;
  for (const auto& o : operands) {
    sources.push_back(o.slot);
    op.args.push_back(ir::Operand::of(o.node));
  }
  op.projections = permuted(p, target, sources);
  op.expr = std::move(expr);
  return ir::make_accum(std::move(op));
}

ir::AsgnRef forward_assign(const Tensor& self, const ir::Projections& p, ir::Op accum, ir::Op op,
                           ir::RhsExprRef expr) {
  ir::AccumOp a;
  a.lhs = self.value();
  a.accum = accum;
  a.initialize_neutral = true;
  a.op = op;
  for (const auto& t : self.args()) a.args.push_back(ir::Operand::of(t.value()));
  a.projections = p;
  a.expr = std::move(expr);
  if (a.expr == nullptr)
    internal_check(ir::op_arity(op) == static_cast<int>(a.args.size()),
                   [&] { return "forward_assign: arity mismatch for " + std::string(ir::op_name(op)); });
  return ir::make_accum(std::move(a));
}

}  // namespace cannl::detail
