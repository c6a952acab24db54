#pragma once
// Kernel fission (semantics-backend.md 8.4): a GPU has no grid-wide barrier, so a scheduled
// routine runs as a sequence of kernels launched in order on one queue; the boundary between two
// kernels is the only grid-wide synchronization. `fission` cuts the routine's top-level
// statements where a later statement depends on cells another workgroup of an earlier one wrote
// (materialized producer/consumer, write-after-write, write-after-read pairs that the aligned rule
// cannot prove), and where a whole-node ZeroOut of a node the open kernel touches runs (a
// device memset of its own; one of a node it does not touch is launched before it). Adjacent
// serial statements coalesce into one one-thread kernel; producer/consumer chains whose nests
// share an aligned parallel prefix (each block reads only what the same block wrote) stay in
// one kernel, and so do independent nests of compatible launch shapes (a nest binding fewer
// slots than the kernel runs under extent-1 loops on the others). Every kernel is checked
// against the target's limits (check_hardware_limits).
//
//   for (const auto& seg : schedule::fission(routine, target)) ...  // in launch order

#include <vector>

#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::schedule {

/// One launch of a fissioned routine.
struct Segment {
  enum class Kind { Kernel, Zero };
  Kind kind = Kind::Kernel;
  /// Kernel: the statements it runs (a Seq or one statement), under the routine's statics.
  /// Between two merged parallel statements whose threads of one block touch each other's cells
  /// there is a top-level Barrier (it must order global memory too: OpenCL's
  /// CLK_GLOBAL_MEM_FENCE). Top-level scalar locals the kernel uses (hoisted by the optimizer)
  /// have their DeclareLocal and defining statements at its start, run by every thread.
  ir::StmtRef body;
  /// Zero: the node the device memsets to 0 (every byte of its buffer).
  ir::NodeRef zeroed;
  /// Kernel: its launch geometry (ir::kernel_geometry of body).
  ir::KernelGeometry geometry;
};

/// The routine's launches, in order. With `enabled` false (config `schedule_fission`) nothing is
/// merged but a statement using a local that the one before it set (Privatize's accumulator: a
/// GPU thread keeps no local across launches): one launch per top-level statement otherwise (the
/// conservative cut everywhere, for debugging). Throws ScheduleError from check_hardware_limits,
/// and when such a local cannot stay in one launch.
std::vector<Segment> fission(const ir::LoweredRoutine& routine, const ir::Target& target, bool enabled = true);

/// Throws ScheduleError (naming the kernel's first loop, the limit and the value) when the
/// kernel's geometry exceeds target.gpu: threads per block, a block or grid dimension, or
/// shared memory.
void check_hardware_limits(const Segment& segment, const ir::Target& target);

}  // namespace cannl::schedule
