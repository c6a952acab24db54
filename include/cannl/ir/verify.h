#pragma once
// The loop-IR verifier: structural invariants every pass must preserve. Throws InternalError
// naming the routine and the offending statement.
//
//   verify(routine);   // index ranks match, every symbol bound, scopes well formed, dtypes legal

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

void verify(const LoweredRoutine& routine);

}  // namespace cannl::ir
