#pragma once
// Virtualization (semantics-backend.md 4.4): captures the computation of every virtual candidate
// in program order and inlines it at each read that follows (inline.h). Writes are kept; cleanup
// drops those of nodes that end virtual.
//
//   ir::LoweredRoutine r2 = virtualize(r, trace, placements.virtual_candidates);
//
// Precondition: `trace` was computed on `routine` (statement positions must match), and every
// candidate's writers are ZeroOut or loop nests around one store (decide_placements checks).

#include <set>

#include "cannl/ir/loop_ir.h"
#include "opt/trace.h"

namespace cannl::opt {

ir::LoweredRoutine virtualize(const ir::LoweredRoutine& routine, const Trace& trace,
                              const std::set<int>& candidates);

}  // namespace cannl::opt
