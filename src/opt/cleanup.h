#pragma once
// Cleanup (semantics-backend.md 4.6): the commitment point. A candidate with a read that
// survived inlining is stored (provenance 17) and keeps its writes; every other candidate is
// committed Virtual and its writes (ZeroOut, loop nests) are dropped.
//
//   ir::LoweredRoutine r3 = cleanup_virtual(r2, trace, placements, ctx);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"
#include "opt/placement.h"
#include "opt/trace.h"

namespace cannl::opt {

/// Drops the writes of nodes that end virtual and updates `placements` (candidates whose reads
/// survive become Local / OnDevice, provenance 17).
ir::LoweredRoutine cleanup_virtual(const ir::LoweredRoutine& routine, const Trace& trace,
                                   Placements& placements, const PassContext& ctx);

}  // namespace cannl::opt
