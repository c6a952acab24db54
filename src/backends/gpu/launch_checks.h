#pragma once
// What both GPU devices check before enqueueing a kernel, so that a bad launch is a named cannl
// error and never a driver's opaque failure (or, on OpenCL, a silently clamped work size).
//
//   if (!launchable(geometry, device.limits(), "add_k0")) return;   // an empty grid
//   PendingKernels pending;  pending.add("add_k0");  ...  pending.describe()

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/target.h"

namespace cannl::backends::gpu {

/// Whether `geometry` launches any thread: false when a slot has extent 0. Throws
/// RuntimeUsageError naming `kernel` and the limit when it exceeds `limits` (threads per block,
/// a block or grid dimension, shared memory), InternalError for a negative extent.
///   launchable({.grid = {4, 1, 1}, .block = {2048, 1, 1}}, h200, "k")  // throws: 2048 > 1024
bool launchable(const ir::KernelGeometry& geometry, const ir::GpuLimits& limits, const std::string& kernel);

/// Throws RuntimeUsageError naming `kernel` when a launch gives it `args` arguments but it declares
/// `arity` parameters (as the module the runtime loaded says; -1 where the runtime cannot tell,
/// which checks nothing). A driver reads as many values as the kernel declares, whatever the
/// launch holds: too many run silently, too few read past the parameter array.
///   check_arity("CUDA", "axpy2d", 7, 6)  // throws "CUDA launch of axpy2d: 7 arguments for 6 parameters"
void check_arity(const std::string& api, const std::string& kernel, std::size_t args, std::int64_t arity);

/// Throws RuntimeUsageError naming `kernel` when `geometry`'s threads per block exceed
/// `kernel_limit`, the kernel's own (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, hipFuncGetAttribute's,
/// OpenCL's CL_KERNEL_WORK_GROUP_SIZE: its registers, local memory or launch bounds may allow fewer
/// than the device's limit; 0 where unknown, which checks nothing). After launchable.
///   check_kernel_threads({.block = {256, 1, 1}}, 128, "k")  // throws: 256 > 128
void check_kernel_threads(const ir::KernelGeometry& geometry, std::int64_t kernel_limit, const std::string& kernel);

/// The kernels enqueued since the queue last drained, for naming the culprit when a later call
/// reports that one failed (a kernel's fault surfaces at the next synchronizing call).
class PendingKernels {
 public:
  void add(const std::string& kernel);
  void clear();
  /// "kernels enqueued since the last synchronization: add_k0, mul_k1" ("" when none).
  std::string describe() const;

 private:
  static constexpr std::size_t kKept = 8;
  mutable std::mutex mutex_;
  // The last kKept, the latest at (count_ - 1) % kKept: a ring whose strings keep their capacity,
  // so that recording a launch allocates nothing once warm.
  std::array<std::string, kKept> names_;
  std::size_t count_ = 0;
};

}  // namespace cannl::backends::gpu
