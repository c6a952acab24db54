#pragma once
// Optimizer pass (private to src/opt): Hoists a LocalScope shared by sibling statements before its first user.
//
//   ir::LoweredRoutine r2 = hoist_cross_statement_cse(r, ctx);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"

namespace cannl::opt {

/// Hoists a LocalScope shared by sibling statements before its first user; pure (builds a new tree) and idempotent.
///   ir::LoweredRoutine r2 = hoist_cross_statement_cse(r, ctx);
ir::LoweredRoutine hoist_cross_statement_cse(const ir::LoweredRoutine& routine, const PassContext& ctx);

}  // namespace cannl::opt
