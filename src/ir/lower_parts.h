#pragma once
// Private: the per-statement lowerings that lower() (src/ir/lower.cpp) dispatches to. Each appends
// the loop-IR statements of one Assignments-IR statement to `out`, in execution order.
//
//   std::vector<StmtRef> out;  lower_accum(accum_op, out);  lower_fetch(fetch, out);

#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/ir/loop_ir.h"

namespace cannl::ir::lowering {

/// Neutral fill (when needed), operand margin resets, then the loop nest (src/ir/lower_accum.cpp).
void lower_accum(const AccumOp& op, std::vector<StmtRef>& out);
/// Margin fill with the pad value (padded nodes), then the fill itself (src/ir/lower_fetch.cpp).
void lower_fetch(const Fetch& fetch, std::vector<StmtRef>& out);

/// The code's body as it is, after a comment naming it; InternalError when a node it touches is
/// padded (its indices are logical ones) (src/ir/lower_loop_code.cpp).
void lower_loop_code(const LoopCode& code, std::vector<StmtRef>& out);

}  // namespace cannl::ir::lowering
