#pragma once
// Optimizer pass (private to src/opt): Rewrites Add reductions over one-hot selectors into guarded dynamic gathers/scatters.
//
//   ir::LoweredRoutine r2 = rewrite_one_hot_reductions(r, ctx);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"

namespace cannl::opt {

/// Rewrites Add reductions over one-hot selectors into guarded dynamic gathers/scatters; pure (builds a new tree) and idempotent.
///   ir::LoweredRoutine r2 = rewrite_one_hot_reductions(r, ctx);
ir::LoweredRoutine rewrite_one_hot_reductions(const ir::LoweredRoutine& routine, const PassContext& ctx);

}  // namespace cannl::opt
