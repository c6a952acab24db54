#pragma once
// Gradient rules as data: for an op with result t (incoming gradient g) and arguments a0..an,
// the contribution to argument k's gradient is an expression over the "gradient environment"
//   env(0) = g, env(1) = t, env(2 + i) = a_i
// accumulated with `accum` (Add, or Sub for a negated contribution).

#include <functional>
#include <optional>
#include <vector>

#include "cannl/tensor/op_builder.h"

namespace cannl::detail {

inline ir::RhsExprRef g() { return arg(0); }
inline ir::RhsExprRef t() { return arg(1); }
inline ir::RhsExprRef a(int i) { return arg(2 + i); }

struct GradContribution {
  ir::RhsExprRef expr;           // null: no gradient flows to this argument
  ir::Op accum = ir::Op::Add;
};

/// One contribution per argument, in argument order.
using GradientRule = std::vector<GradContribution>;

/// A CodeBuilder emitting the rule's contributions for every argument that requires a gradient.
CodeBuilder backward_of(GradientRule rule);

/// A CodeBuilder whose rule depends on the result's dtype (`make_rule(self.value()->dtype)`),
/// for rules that compare t with a recomputed value: see `as_stored`.
CodeBuilder backward_of(std::function<GradientRule(ir::DType)> make_rule);

/// `e` (computed in the compute dtype) as a node of `dtype` stores it: rounded to f16 / bf16 /
/// fp8, else `e` itself. A rule selecting the cells where the result t equals a recomputed value
/// (`t == a0 * a1` of an einmax) must compare with this: a narrow t holds the rounded value, so
/// `t == a0 * a1` in f32 is false for almost every f16 product and no gradient would flow.
ir::RhsExprRef as_stored(ir::RhsExprRef e, ir::DType dtype);

}  // namespace cannl::detail
