#pragma once
// Internal helpers of the optimizers: element-wise update assignments over a parameter's dims
// that may also read scalar ([1]) nodes, and the persistent state buffers they update.

#include <string>
#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/ir/tensor_node.h"

namespace cannl::nn::detail {

inline ir::RhsExprRef ap(ir::Op op, std::vector<ir::RhsExprRef> c) {
  return ir::RhsExpr::apply(op, std::move(c));
}
inline ir::RhsExprRef lit(double v) { return ir::RhsExpr::constant(v); }
inline ir::RhsExprRef arg(int i) { return ir::RhsExpr::argument(i); }

/// lhs accum= expr(args) cell by cell over lhs's dims; an arg whose dims are {1} while lhs's are
/// not is read at its single cell (a broadcast scalar such as a step counter or a norm).
ir::AsgnRef elementwise(const ir::NodeRef& lhs, ir::Op accum, const std::vector<ir::NodeRef>& args,
                        ir::RhsExprRef expr);

/// lhs[0] += expr(args) summed over every cell of the args (all of the same dims).
ir::AsgnRef reduce_to_scalar(const ir::NodeRef& lhs, const std::vector<ir::NodeRef>& args,
                             ir::RhsExprRef expr);

/// A persistent buffer (kept across routines) of the given dims; `provenance` tags the mode.
ir::NodeRef state_buffer(const std::string& name, ir::DType dtype,
                         const std::vector<std::int64_t>& dims, int provenance);

}  // namespace cannl::nn::detail
