#pragma once
// What several devices of one backend do together: copies between them without the host, and
// the collective that averages buffers across them (NCCL for CUDA devices, loaded at run time).
// The runtime's multi-device contexts and data-parallel training use these; a backend without
// them answers "not here" and the caller goes through the host.
//
//   if (!backends::copy_between_devices(*gpu1, b1, *gpu0, b0)) { /* read b0, write b1 */ }
//   auto nccl = backends::open_nccl_all_reduce(devices, {});      // BackendUnavailable without libnccl
//   nccl->average({{&g0_dev0, &g1_dev0}, {&g0_dev1, &g1_dev1}}, backends::ReduceType::F32, "gradients");

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/backends/backend.h"

namespace cannl::backends {

/// Enqueues a copy of `src` (a buffer of `src_backend`) into `dst` (of `dst_backend`, same size)
/// between two CUDA or two HIP devices: a peer copy after the work queued on the source so far,
/// the source's later work waiting for it; CUDA devices without a peer path copy through
/// page-locked host memory. Returns false, having done nothing, where the backends have no such
/// copy (CPU or OpenCL backends, HIP devices without a peer path): copy through the host then.
bool copy_between_devices(Backend& dst_backend, Buffer& dst, Backend& src_backend, const Buffer& src);

/// The element type of the buffers a collective reduces.
enum class ReduceType { F32, F64 };

/// An in-place average of buffers across devices (and processes), enqueued on the devices' queues.
class DeviceAllReduce {
 public:
  virtual ~DeviceAllReduce() = default;
  /// buffers[d][k] is buffer k of local device d (d in the order the collective was opened with);
  /// buffer k has the same size on every device of every process. Each becomes the elementwise
  /// mean of its copies over every device of every process. `what` names the call in errors.
  /// Throws RuntimeUsageError on a wrong shape of `buffers` or a buffer of another device,
  /// DistributedError naming the failed call and NCCL's reason.
  virtual void average(const std::vector<std::vector<Buffer*>>& buffers, ReduceType type, std::string_view what) = 0;
  /// "NCCL 2.21.5: 2 devices x 1 process"
  virtual std::string describe() const = 0;
};

/// Where this process's devices sit among the processes of a run.
struct DeviceAllReduceRanks {
  int process_rank = 0;
  int processes = 1;
  /// With several processes: replaces `bytes` on every process by rank 0's (over MPI); it
  /// carries the NCCL unique id rank 0 makes.
  std::function<void(std::span<std::byte> bytes)> broadcast_from_rank0;
};

/// Whether libnccl loads here (config nccl_library, else libnccl.so.2); when not, why (the files
/// tried). Processes of one run check this together before any of them opens a communicator:
/// one without NCCL would leave the others waiting in ncclCommInitRank.
bool nccl_available(std::string* why = nullptr);

/// NCCL over the CUDA `devices` of this process (backends made by make_cuda_backend or a
/// multi-device CUDA context) and those of the other processes: ranks are process_rank *
/// devices.size() + d, so the reduction's members are in a fixed order. One process uses
/// ncclCommInitAll; several get rank 0's ncclGetUniqueId and call ncclCommInitRank for each local
/// device in one group. The library is config key nccl_library, else libnccl.so.2.
/// Throws BackendUnavailable naming libnccl when it is missing, RuntimeUsageError when a device
/// is not CUDA or appears twice, DistributedError when NCCL fails.
std::unique_ptr<DeviceAllReduce> open_nccl_all_reduce(std::span<Backend* const> devices, const DeviceAllReduceRanks& ranks);

}  // namespace cannl::backends
