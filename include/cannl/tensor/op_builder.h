#pragma once
// Building a tensor op: creating the op tensor (shape step + nodes + code builders) and the
// assignments its forward and backward code is made of. Used by the tensor layer's op files and
// by layers above it that define fused ops of their own (nn/ops.h), so not an end-user interface.

#include <optional>
#include <string>
#include <vector>

#include "cannl/tensor/tensor.h"

namespace cannl::detail {

struct OpSpec {
  std::string label;
  std::vector<Tensor> args;
  shape::Logic logic;
  CodeBuilder forward;
  CodeBuilder backward;             // null = not differentiable
  std::optional<ir::DType> dtype;   // result precision; default: promoted from the args
  /// The forward writes every block of a concatenation spec (`a^b`, concat); any other op
  /// computes a single block, so make_op refuses a spec with `^` for it.
  bool writes_concat_blocks = false;
};

/// Registers the shape step, creates the value (and grad) nodes, stores the builders.
Tensor make_op(OpSpec spec);

/// A sum of products of two operands (matmul, einsum, convolution) under the current precision
/// policy (precision_policy.h): forward and backward round both factors of every product, the
/// incoming gradient included, and sum in the result's precision. Under bf16 / f16 / tf32 the
/// operands are rounded copies (`<label>_bf16`, the operand's rows exactly, gradient straight
/// through) and the backward rounds the incoming gradient once into a node of its own, so all
/// three products are plain `d += a * b` nests.
///   sum_of_products("einsum", {q, k}, shape::Einsum{"...|t, h, d; ...|s, h, d => ...|t, s, h"})
Tensor sum_of_products(const std::string& label, std::vector<Tensor> args, shape::Logic logic);

/// Next tensor id (shared by leaves and ops); never reused, not even after reset_tensor_state().
int next_tensor_id();

/// Whether `t` belongs to the current shape generation (built since the last reset_tensor_state()).
bool is_current(const Tensor& t);
/// Throws RuntimeUsageError "tensor 'y' was created before reset_tensor_state()" when `t` is of
/// an earlier shape generation: its step id and inference variables now belong to other tensors.
void check_current(const Tensor& t);

/// The projections of `t`'s shape step (`t` checked current first), e.g. for its CodeBuilders.
ir::Projections step_projections(const Tensor& t);
/// The concatenation blocks of `t`'s shape step (`t` checked current first).
std::vector<shape::Block> step_blocks(const Tensor& t);

/// The default precision (config key default_prec).
ir::DType default_dtype();

/// The threefry op random tensors and initializers use (config key default_prng_variant: crypto or
/// light; anything else is a ConfigError, never a silent choice).
ir::Op default_prng_op();

/// Projections of a gradient assignment reusing the forward product space: the written slot is
/// forward slot `target` and the operands read forward slots `sources` (-1 = the forward LHS,
/// k >= 0 = forward RHS k).
ir::Projections permuted(const ir::Projections& p, int target, const std::vector<int>& sources);

/// One operand of an assignment: a node read at a forward slot (-1 = LHS, k = RHS k).
struct SlotOperand {
  ir::NodeRef node;
  int slot;
};

/// grad_target[slot target] accum= expr(operands...) over the forward projections.
ir::AsgnRef grad_assign(const ir::NodeRef& grad_target, const ir::Projections& p, int target,
                        const std::vector<SlotOperand>& operands, ir::RhsExprRef expr,
                        ir::Op accum = ir::Op::Add);

/// lhs =: op(args) with the accumulator `accum`, resetting to its neutral element first.
ir::AsgnRef forward_assign(const Tensor& self, const ir::Projections& p, ir::Op accum, ir::Op op,
                           ir::RhsExprRef expr = nullptr);

/// Shorthands for expressions.
inline ir::RhsExprRef arg(int i) { return ir::RhsExpr::argument(i); }
inline ir::RhsExprRef lit(double v) { return ir::RhsExpr::constant(v); }
inline ir::RhsExprRef ap(ir::Op op, std::vector<ir::RhsExprRef> children) {
  return ir::RhsExpr::apply(op, std::move(children));
}

}  // namespace cannl::detail
