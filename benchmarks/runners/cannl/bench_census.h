#pragma once
// bench_cannl --census UNITS: a workload's step scheduled for a CUDA-like device of UNITS
// multiprocessors (sm_90's launch limits, tensor-core formats and cp.async), its kernels ranked by their static
// load (cannl/schedule/kernel_census.h). Nothing runs and no device is needed: where the GPU
// schedule leaves the device idle, read before a GPU run.
//
//   bench_cannl --fixture fixtures/gpt2_mini_train.safetensors --census 132

#include <cstdint>
#include <string>

#include "cannl/ir/loop_ir.h"

namespace cannl::bench {

/// The census of `routine` (optimized, unscheduled) under the default GPU schedule on a device
/// of `units` multiprocessors: the summary with its `top` heaviest kernels and every starving one.
std::string gpu_census(const ir::LoweredRoutine& routine, std::int64_t units, std::size_t top = 10);

}  // namespace cannl::bench
