#pragma once
// Guard folding after scheduling (0.8 notes, "interval analysis folding schedule guards"): the
// schedule transforms guard what they cannot prove in range (Split's remainder `If (o*f + i <
// N)`, Pad's `If (i < old end)`), and later transforms (Partition, Unroll, a Split of the outer
// loop) often make that proof possible. This pass runs the optimizer's interval analysis over
// the scheduled routine and
//   * unwraps an If whose condition holds at every iteration, and drops one that never holds;
//   * turns a dynamic gather or scatter (GetDynamic, SetDynamic) whose row is an index
//     expression proven inside the axis into the plain access (no row check left to print).
// Nothing else changes: no arithmetic is rewritten, loops keep their annotations, tiles are not
// entered, so the routine computes the same bits. Runs in Context::compile after the schedule
// (the caller's or the backend's default) and before the backend's final lowering.
//
//   ir::LoweredRoutine folded = opt::fold_guards(schedule::apply(r, transforms));

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// `routine` with the guards its loop ranges and statics decide folded away.
ir::LoweredRoutine fold_guards(const ir::LoweredRoutine& routine);

}  // namespace cannl::opt
