#pragma once
// The CUDA device on a given driver table: open_cuda uses the process's driver; tests bring
// their own (a mock driver that runs the device's calls on host memory and checks them).
//
//   static const CudaDriverApi api = CudaDriverApi::load({"/path/to/libmockcuda.so"});
//   auto device = open_cuda_on(api, 0);

#include <memory>
#include <optional>

#include "backends/gpu/cuda_driver_api.h"
#include "backends/gpu/device.h"

namespace cannl::backends::gpu {

/// Device `ordinal` of the driver `api`, which must outlive the device and all it makes.
/// Throws like open_cuda.
std::shared_ptr<Device> open_cuda_on(const CudaDriverApi& api, int ordinal);

/// What NCCL needs of a CUDA device: its driver, CUdevice, primary context and stream.
struct CudaDeviceHandles {
  const CudaDriverApi* api = nullptr;
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  cuda::CUstream stream = nullptr;
};
/// The handles of `device`; nullopt when it is not a CUDA device.
std::optional<CudaDeviceHandles> cuda_handles(const Device& device);
/// The device pointer of `buffer`, one of `device`'s (RuntimeUsageError otherwise).
cuda::CUdeviceptr cuda_pointer(const Device& device, const Buffer& buffer);

/// Copies `src` (a buffer of `src_device`) into `dst` (of `dst_device`, same size) between two
/// CUDA devices: where they reach each other (cuDeviceCanAccessPeer; peer access is enabled on
/// first use) enqueued with cuMemcpyPeerAsync on dst's stream after the work enqueued on src's so
/// far, src's later work waiting for the copy; otherwise through page-locked host memory, waiting
/// for both streams. Returns false, having done nothing, when either device is not CUDA.
///   if (!cuda_peer_copy(*gpu1, b1, *gpu0, b0)) { b0.read(host); b1.write(host); }
bool cuda_peer_copy(Device& dst_device, Buffer& dst, Device& src_device, const Buffer& src);

}  // namespace cannl::backends::gpu
