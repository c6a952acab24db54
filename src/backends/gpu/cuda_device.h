#pragma once
// The CUDA device on a given driver table: open_cuda uses the process's driver; tests bring
// their own (a mock driver that runs the device's calls on host memory and checks them).
//
//   static const CudaDriverApi api = CudaDriverApi::load({"/path/to/libmockcuda.so"});
//   auto device = open_cuda_on(api, 0);

#include <memory>

#include "backends/gpu/cuda_driver_api.h"
#include "backends/gpu/device.h"

namespace cannl::backends::gpu {

/// Device `ordinal` of the driver `api`, which must outlive the device and all it makes.
/// Throws like open_cuda.
std::shared_ptr<Device> open_cuda_on(const CudaDriverApi& api, int ordinal);

}  // namespace cannl::backends::gpu
