#pragma once
// The GPU backend over a device the caller opened (gpu_backend.cpp): tests make one on a mock
// driver, and the backends' multi-device pieces (peer copies, NCCL) find the device of a backend.
//
//   auto backend = make_gpu_backend(open_cuda_on(mock_api, 1), codegen::GpuLanguage::Cuda);
//   gpu::Device* device = gpu_device_of(*backend);     // nullptr for the CPU backends

#include <memory>
#include <vector>

#include "backends/gpu/device.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/schedule/fission.h"

namespace cannl::backends {

/// A backend compiling for `device` in `language` (Cuda for a CUDA device, Hip, OpenCL).
std::shared_ptr<Backend> make_gpu_backend(std::shared_ptr<gpu::Device> device, codegen::GpuLanguage language);

/// The device of a GPU backend; nullptr when `backend` is not one.
const std::shared_ptr<gpu::Device>* gpu_device_of(const Backend& backend);

/// The target a GPU-style backend compiles for: its device's (`device_target`, the formats its
/// tensor cores take, whether it copies asynchronously) with the config keys applied that every
/// GPU backend reads: index_dtype, gpu_tile_*, gpu_tensor_cores, gpu_mma_*, gpu_async_copy.
/// ConfigError for a value a key does not take.
ir::Target configured_gpu_target(ir::Target device_target, std::vector<ir::NarrowFormat> device_mma_formats,
                                 bool device_copies_async);

/// What every GPU-style backend (the GPU backends, gpu-emulator) does to a routine for `target`:
/// its default schedule (the default GPU schedule, unless config automatic_gpu_schedule is off),
/// and a scheduled routine's final lowering round and launches (fission, config schedule_fission).
ir::LoweredRoutine automatic_gpu_schedule(const ir::LoweredRoutine& routine, const ir::Target& target);
struct GpuLaunches {
  ir::LoweredRoutine lowered;
  std::vector<schedule::Segment> segments;
};
GpuLaunches gpu_launches(const ir::LoweredRoutine& scheduled, const ir::Target& target);

}  // namespace cannl::backends
