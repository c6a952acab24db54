#pragma once
// The GPU backend over a device the caller opened (gpu_backend.cpp): tests make one on a mock
// driver, and the backends' multi-device pieces (peer copies, NCCL) find the device of a backend.
//
//   auto backend = make_gpu_backend(open_cuda_on(mock_api, 1), codegen::GpuLanguage::Cuda);
//   gpu::Device* device = gpu_device_of(*backend);     // nullptr for the CPU backends

#include <memory>

#include "backends/gpu/device.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/gpu_codegen.h"

namespace cannl::backends {

/// A backend compiling for `device` in `language` (Cuda for a CUDA device, Hip, OpenCL).
std::shared_ptr<Backend> make_gpu_backend(std::shared_ptr<gpu::Device> device, codegen::GpuLanguage language);

/// The device of a GPU backend; nullptr when `backend` is not one.
const std::shared_ptr<gpu::Device>* gpu_device_of(const Backend& backend);

}  // namespace cannl::backends
