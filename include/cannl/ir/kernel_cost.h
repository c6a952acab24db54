#pragma once
// A static estimate of one GPU kernel's work per thread, for reading a schedule without a device
// to time it on (the census in schedule/kernel_census.h ranks a routine's kernels by it).
//
// A step is one statement execution of a thread: a store, a scatter, a local update, one FMA of
// a tile's register block, one staged element of a tile's slice, one MMA instruction of a
// warp's lane. Serial and unrolled loops multiply their body's steps by their extent; a loop
// bound to a hardware slot by the extent over the slot's launch extent (1 when it covers the
// slot); a Vectorized loop by its extent over four lanes; an If counts as taken. The estimate
// ignores memory traffic and latency: a kernel of many steps on few threads is slow on any GPU,
// which is what it is for.
//
//   const KernelGeometry g = kernel_geometry(body);
//   kernel_steps_per_thread(body, g);  // for (i Grid 64) for (j Workgroup 256) for (k 512) ...: 512

#include <cstdint>

#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::ir {

/// Steps (see above) one thread of the kernel whose body is `body` and geometry `geometry`
/// runs, at least 1.
std::int64_t kernel_steps_per_thread(const StmtRef& body, const KernelGeometry& geometry);

/// How a kernel loads a device: its threads against the device's resident threads, its steps per
/// thread, and the waves of blocks it takes. `starves` marks a kernel that keeps most of the
/// device idle while each of its few threads runs a long serial path: on a GPU such a kernel
/// takes as long as its longest thread, which is what a schedule must avoid.
///
/// Fission merges nests of different sizes into one kernel (a row maximum's 8192 rows beside an
/// elementwise nest's 400 million cells): each statement of the body runs on the threads its
/// own loops bind, the rest of the launch skipping it. So the critical path and starvation are
/// judged statement by statement: a statement of 50257 steps on 8192 threads costs its steps
/// once, not once per wave of the elementwise nest's threads.
struct KernelLoad {
  std::int64_t threads = 0;
  /// The steps of a thread that runs every statement of the body.
  std::int64_t steps_per_thread = 1;
  /// Threads the device keeps resident at once (compute units x resident threads per unit);
  /// 0 when the device does not say how many units it has.
  std::int64_t device_threads = 0;
  /// ceil(threads / device_threads), 1 when device_threads is unknown.
  std::int64_t waves = 1;
  /// The kernel's steps on its critical path: over the statements of its body, each one's steps
  /// per thread times the waves of the threads that run it.
  std::int64_t critical_steps = 1;
  /// Some statement runs on under kStarvedDeviceShare of the device with at least kStarvedSteps
  /// steps per thread.
  bool starves = false;

  /// threads / device_threads, at most 1 (0 when unknown).
  double device_share() const;
};

/// A kernel starves the device below this share of its resident threads (one warp per CUDA
/// multiprocessor: a register-blocked tile with a few warps per unit still keeps it busy) ...
inline constexpr double kStarvedDeviceShare = 1.0 / 64;
/// ... when each thread runs at least this many steps.
inline constexpr std::int64_t kStarvedSteps = 1024;

/// Threads the device keeps resident at once: its compute units times 2048 on warp devices
/// (CUDA multiprocessors since sm_80 keep 64 warps), else times one block of
/// max_threads_per_block; 0 when the device does not say how many units it has.
std::int64_t device_resident_threads(const GpuLimits& limits);

/// The load of the kernel whose body is `body` and geometry `geometry` on a device of `limits`.
KernelLoad kernel_load(const StmtRef& body, const KernelGeometry& geometry, const GpuLimits& limits);

/// Steps per thread of a blocked tile (TileMma::blocking): its slices, each staged (the block's
/// share of bm x bk and bk x bn elements per thread) and multiplied (tm x tn FMAs per step, or
/// one MMA instruction per 16 x 8 result and mma_steps()), then its epilogue (tm x tn stores).
std::int64_t tile_steps_per_thread(const TileMma& tile);

}  // namespace cannl::ir
