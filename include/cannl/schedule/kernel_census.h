#pragma once
// A routine's kernels ranked by their static load on a device (ir/kernel_cost.h): where a GPU
// step's time will go, read off the schedule without a device to profile on. The GPU backend
// logs it at debug level >= 1; the schedule tests hold the workloads to it (no kernel starves
// the device).
//
//   const auto census = kernel_census(fission(lowered, target), target.gpu);
//   std::cerr << kernel_census_summary(census, "step", 5);

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "cannl/ir/kernel_cost.h"
#include "cannl/schedule/fission.h"

namespace cannl::schedule {

/// One kernel of a fissioned routine (memsets are no kernels).
struct KernelCensusRow {
  std::size_t kernel = 0;  // index among the routine's kernels: the printed name's "_k<kernel>"
  ir::KernelGeometry geometry;
  ir::KernelLoad load;
  /// The nodes it writes, in program order, comma-separated ("grad_w1, w1").
  std::string writes;
};

/// Every kernel of `segments`, in launch order.
std::vector<KernelCensusRow> kernel_census(std::span<const Segment> segments, const ir::GpuLimits& limits);

/// The rows that starve the device (KernelLoad::starves), in launch order.
std::vector<KernelCensusRow> starving_kernels(std::span<const KernelCensusRow> census);

/// A readable table: the routine's kernels and critical steps, then its `top` heaviest kernels
/// by critical steps with their geometry and share of the routine's critical steps, then every
/// kernel that starves the device.
///   "step: 42 kernels, 1.2e+06 critical steps on 270336 resident threads; the heaviest:
///      k12  64 x 256 threads (6.1% of the device), 5126 steps per thread, 21.3% of the steps: grad_w1"
std::string kernel_census_summary(std::span<const KernelCensusRow> census, const std::string& routine,
                                  std::size_t top = 5);

}  // namespace cannl::schedule
