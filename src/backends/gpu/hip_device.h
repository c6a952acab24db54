#pragma once
// The HIP device on a given runtime table: open_hip uses the process's runtime; tests may bring
// their own.
//
//   auto device = open_hip_on(HipRuntimeApi::get(), 0, {.printf_fifo_bytes = 1 << 20});

#include <cstddef>
#include <memory>

#include "backends/gpu/device.h"
#include "backends/gpu/hip_runtime_api.h"

namespace cannl::backends::gpu {

struct HipOptions {
  /// The device's printf buffer (config key hip_printf_fifo_size); 0 keeps the runtime's size.
  std::size_t printf_fifo_bytes = 0;
};

/// Device `ordinal` of the runtime `api`, which must outlive the device and all it makes.
/// Throws like open_hip.
std::shared_ptr<Device> open_hip_on(const HipRuntimeApi& api, int ordinal, const HipOptions& options = {});

/// Enqueues a copy of `src` (a buffer of `src_device`) into `dst` (of `dst_device`, same size)
/// with hipMemcpyPeerAsync on dst's stream, after the work enqueued on src's so far, src's later
/// work waiting for it; peer access is enabled on first use. Returns false, having done nothing,
/// when either device is not HIP or the GPUs cannot reach each other: copy through the host then.
bool hip_peer_copy(Device& dst_device, Buffer& dst, Device& src_device, const Buffer& src);

/// The GPU architecture in a device's gcnArchName ("gfx90a" of "gfx90a:sramecc+:xnack-"), or ""
/// when it names none (the runtime's properties in a layout cannl does not know).
std::string gfx_arch_of(const std::string& gcn_arch_name);

}  // namespace cannl::backends::gpu
