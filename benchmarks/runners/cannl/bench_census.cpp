// bench_cannl --census (bench_census.h).
#include "bench_census.h"

#include "cannl/ir/target.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/kernel_census.h"
#include "cannl/schedule/lower_for_target.h"

namespace cannl::bench {

namespace {

std::vector<schedule::KernelCensusRow> census_of(const ir::LoweredRoutine& routine, std::int64_t units) {
  const ir::GpuLimits limits = ir::sm90_gpu_limits(units);
  ir::Target target = ir::generic_gpu_target(limits);
  target.backend = "census";
  // sm_90's tensor cores and cp.async, as the CUDA backend's target lists them for an H200: tiles
  // of operands a precision policy rounds (bf16, f16, tf32) are counted in MMA instructions.
  target.gpu_mma_formats = {ir::NarrowFormat::BF16, ir::NarrowFormat::F16, ir::NarrowFormat::TF32};
  target.gpu_async_copy = true;
  const ir::LoweredRoutine scheduled =
      schedule::default_gpu_schedule(routine, schedule::GpuScheduleOptions::from_config(target));
  return schedule::kernel_census(schedule::fission(schedule::lower_for_target(scheduled, target), target), limits);
}

}  // namespace

std::string gpu_census(const ir::LoweredRoutine& routine, std::int64_t units, std::size_t top) {
  return schedule::kernel_census_summary(census_of(routine, units), routine.name, top);
}

}  // namespace cannl::bench
