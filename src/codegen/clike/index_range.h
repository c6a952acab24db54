#pragma once
// The precondition of printing a routine with 32-bit indices (ir::Target::index_dtype I32): every
// loop counter, dynamic row, buffer offset and partial sum of an offset the printer writes fits
// int32. Checked from the loop IR alone (loop extents and node dims), before any text exists, so
// a routine too large for its index type is a named error and never a silent overflow.
//
//   check_index_range(routine, ir::DType::I32);   // IndexRangeError naming the node and its size

#include "cannl/ir/loop_ir.h"

namespace cannl::codegen {

/// Throws IndexRangeError when `index_dtype` is I32 and a node `routine` touches has more
/// elements (padding included) than int32 indexes, a loop runs outside int32, or an access's
/// offset can leave int32 on the way (statics excepted: they are int64 and widen what they meet).
/// Does nothing for I64.
void check_index_range(const ir::LoweredRoutine& routine, ir::DType index_dtype);

}  // namespace cannl::codegen
