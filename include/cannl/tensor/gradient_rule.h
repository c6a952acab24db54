#pragma once
// Gradient rules as data: for an op with result t (incoming gradient g) and arguments a0..an,
// the contribution to argument k's gradient is an expression over the "gradient environment"
//   env(0) = g, env(1) = t, env(2 + i) = a_i
// accumulated with `accum` (Add, or Sub for a negated contribution).

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

}  // namespace cannl::detail
