#pragma once
// Placement decisions (semantics-backend.md 2.3, 4.3): Virtual (inlined at every read), Local
// (a function-local array) or OnDevice (a context buffer), each with a provenance code.
//
//   Placements p = decide_placements(trace_routine(r), ctx);
//   p.virtual_candidates.contains(h->id)   // virtualize will try to inline h
//
// Declared intent constrains decisions: Materialized / OnDevice nodes stay OnDevice, NeverVirtual
// / DeviceOnly / Local nodes are never virtual; nodes with host data, nodes the lineage already
// holds, read-only inputs, recurrent nodes and routine outputs are OnDevice. Nodes private to the
// routine become Virtual candidates unless a cap applies (visits, recompute cost, fan-in); the
// caps are cost heuristics, never what makes inlining legal (the inliner checks that).

#include <map>
#include <set>

#include "cannl/opt/pass.h"
#include "opt/trace.h"

namespace cannl::opt {

struct Placements {
  std::map<int, Decision> decisions;  // by node id; candidates carry a provisional Virtual
  std::set<int> virtual_candidates;
};

Placements decide_placements(const Trace& trace, const PassContext& ctx);

/// The storage decision for a node private to one routine: Local when it fits
/// stack_threshold_in_bytes, else OnDevice; `code`/`why` say why it is stored at all.
///   stored_private(*h, ctx, provenance::kVisitCap, "a cell is read 2 times")
Decision stored_private(const ir::TensorNode& node, const PassContext& ctx, int code,
                        const std::string& why);

}  // namespace cannl::opt
