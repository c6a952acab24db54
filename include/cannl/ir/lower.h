#pragma once
// Lowering: Assignments IR -> loop IR (semantics-backend.md 3.3).
//
// One loop per product-space axis with fresh symbols; neutral-element initialization whenever the
// projection is not both surjective and injective; padding margins of operands reset to the
// consuming op's neutral element; fetches lowered to fills.
//
//   LoweredRoutine r = lower(comp, "train_step");

#include <string>

#include "cannl/ir/assignments.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

LoweredRoutine lower(const Comp& comp, const std::string& name);

}  // namespace cannl::ir
