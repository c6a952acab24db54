#pragma once
// Inlining (semantics-backend.md 4.5): the value of a virtual node's cell at a read site, as a
// LocalScope that replays the node's writers (captured in program order up to the read).
//
//   // producer: for i0: for i1: h[i0] = h[i0] + w[i0, i1] * x[i1]   (after zero_out h)
//   // read h[j] -> LocalScope v { for k: v = v + w[j, k] * x[k] }
//
// Per writer, bare LHS iterators bind to the call indices (their loops disappear: the LHS map is
// injective over them), with a range guard when the loop does not cover the axis; every other
// position becomes an equality guard; loops that stay are replayed with fresh symbols and nested
// scopes with fresh ids (capture-avoiding). The local starts at 0 like a zeroed buffer.

#include <optional>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// The code that computes a virtual node so far: its writer statements (ZeroOut or a loop nest
/// around one store), in program order, with their own reads already inlined.
struct Computation {
  ir::NodeRef node;
  std::vector<ir::StmtRef> writers;
};

/// The cell `call_index` of `comp.node` as a LocalScope, or nullopt when a writer has a form the
/// inliner cannot replay (the read then stays, and cleanup stores the node).
///   inline_computation(comp, {AxisIndex::iterator(j)})
std::optional<ir::ScalarRef> inline_computation(const Computation& comp,
                                                const std::vector<ir::AxisIndex>& call_index);

}  // namespace cannl::opt
