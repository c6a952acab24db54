#pragma once
// Optimizer pass (private to src/opt): Replaces a LocalScope alpha-equivalent to an earlier one in the same statement by GetLocal.
//
//   ir::LoweredRoutine r2 = eliminate_common_subexpressions(r, ctx);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"

namespace cannl::opt {

/// Replaces a LocalScope alpha-equivalent to an earlier one in the same statement by GetLocal; pure (builds a new tree) and idempotent.
///   ir::LoweredRoutine r2 = eliminate_common_subexpressions(r, ctx);
ir::LoweredRoutine eliminate_common_subexpressions(const ir::LoweredRoutine& routine, const PassContext& ctx);

}  // namespace cannl::opt
