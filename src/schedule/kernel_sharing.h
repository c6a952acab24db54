#pragma once
// Whether two top-level parallel statements of a scheduled routine may run in one GPU kernel
// (private to src/schedule; kernel fission asks it, semantics-backend.md 8.4). A GPU has no
// grid-wide barrier: a later statement may depend only on cells its own block of an earlier
// statement touched. The nests must then share an aligned parallel prefix: the same chain of
// Grid loops (positionally equal extents, so the same slots), and every access pair of the two
// statements to a node either writes reaching one cell only from equal Grid indices.
//
//   for i0 Grid: for i1 Workgroup: x[256*i0 + i1] = ...
//   for i2 Grid: for i3 Workgroup: y[256*i2 + i3] = x[256*i2 + i3]   // Free: the same thread
//   for i2 Grid: for i3 Workgroup: y[256*i2 + i3] = x[256*i2 + 255 - i3]   // WithBarrier

#include "cannl/ir/loop_ir.h"
#include "schedule/access_relations.h"

namespace cannl::schedule::detail {

enum class Sharing {
  Free,         // every shared cell is touched by the same thread in both: no synchronization
  WithBarrier,  // by the same block: a workgroup barrier between the two orders them
  Separate,     // by different blocks (or unproven): a kernel boundary must order them
};

/// What kernel_sharing needs of one top-level statement (computed once per statement).
struct StatementFacts {
  LoopAccesses accesses;
  /// Its Grid loops from its top (each the whole body of the one before, looking through
  /// guards), then its thread loops likewise; `whole`: no other hardware loop in it.
  std::vector<const ir::For*> grid, threads;
  bool whole = false;
  /// It holds a WorkgroupReduce loop: its steps are not one thread each (the printer runs the
  /// loop on the slot's first thread, or accumulates a block's tree there), so no later or
  /// earlier statement's threads are aligned with its threads; a barrier orders them.
  bool reduces = false;
};
StatementFacts statement_facts(const ir::StmtRef& stmt);

/// How `later` may follow `earlier` (both top-level statements of `routine`, annotated with
/// Grid / Workgroup loops) in one kernel.
Sharing kernel_sharing(const ir::LoweredRoutine& routine, const StatementFacts& earlier, const StatementFacts& later);

}  // namespace cannl::schedule::detail
