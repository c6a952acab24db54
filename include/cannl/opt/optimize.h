#pragma once
// The loop-IR optimizer (semantics-backend.md 4): tracing and placement, virtualization and
// inlining, cleanup, simplification, the one-hot rewrites, CSE and cross-statement hoisting, in
// that order (src/opt/pipeline.cpp is the only place that orders them).
//
//   opt::Optimized o = opt::optimize(ir::lower(comp, "step"), opt::PassContext::from_config("step"));
//   for (auto& [id, d] : o.decisions) if (d.placement == opt::Placement::OnDevice) allocate(id);

#include "cannl/ir/loop_ir.h"
#include "cannl/opt/pass.h"

namespace cannl::opt {

/// Optimizes a lowered routine. With config key `optimize` = false the routine is returned
/// unchanged and every node it touches is decided OnDevice. Node intent (TensorNode::mode) is
/// read, never changed: decisions live in the result. At debug >= 1 every pass is timed and the
/// IR verified after it; at debug >= 2 the IR before and after each pass is written to
/// build_files/<exe>/<routine>.<NN>-<pass>.ll.
///   auto o = optimize(routine, ctx);   o.routine is what backends compile
Optimized optimize(const ir::LoweredRoutine& routine, const PassContext& ctx);

/// The same pipeline, with the `optimize` switch given explicitly (tests compare both).
///   auto plain = optimize(routine, ctx, /*enabled=*/false);   plain.routine.body == routine.body
Optimized optimize(const ir::LoweredRoutine& routine, const PassContext& ctx, bool enabled);

}  // namespace cannl::opt
