#pragma once
// Averages nodes across the devices of a context and the processes of a run without leaving the
// GPUs: NCCL over CUDA devices (cannl/backends/multi_device.h), the NCCL unique id sent over the
// run's communicator (MPI). Data-parallel training averages its gradients with it; where it cannot
// open (no libnccl, not CUDA) training sums on the host and over MPI instead.
//
//   auto gpus = runtime::Context::cuda_devices({0, 1});
//   auto average = runtime::DeviceAverage::open_nccl({gpus.device(0), gpus.device(1)},
//                                                     runtime::single_process_communicator());
//   average->run(gradients, "gradients of step 3");   // each device now holds the mean

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/runtime/communicator.h"
#include "cannl/runtime/context.h"

namespace cannl::backends {
class DeviceAllReduce;
}

namespace cannl::runtime {

class DeviceAverage {
 public:
  /// NCCL over `devices` (device handles of one CUDA context, in order) and the processes of
  /// `communicator` (every process passes as many devices; NCCL's ranks are process rank x
  /// devices + device index). Throws BackendUnavailable naming libnccl when it is missing,
  /// RuntimeUsageError when a device is not CUDA, DistributedError when NCCL fails (or the
  /// unique id cannot be sent).
  static std::shared_ptr<DeviceAverage> open_nccl(std::vector<Context> devices, std::shared_ptr<Communicator> communicator);
  /// The same over another collective (tests bring one that averages on the host what NCCL would
  /// average on the devices); `devices` in the order `collective` numbers them.
  static std::shared_ptr<DeviceAverage> over(std::vector<Context> devices,
                                             std::unique_ptr<backends::DeviceAllReduce> collective);
  ~DeviceAverage();
  DeviceAverage(const DeviceAverage&) = delete;
  DeviceAverage& operator=(const DeviceAverage&) = delete;

  /// Replaces `nodes` on every device by their elementwise mean over every device of every
  /// process, enqueued on the devices' streams (reads wait for it) after the work queued on them
  /// so far (a device with a worker queue, cpu_devices, is waited for). The nodes are all f32 or all
  /// f64 and initialized on every device. Throws RuntimeUsageError for other dtypes,
  /// UninitializedError for a node a device lacks, DistributedError from NCCL. After a failure of
  /// the collective the nodes are uninitialized on every device (some may be half averaged).
  void run(std::span<const ir::NodeRef> nodes, std::string_view what);
  /// "NCCL 2.21.5: 2 device(s) x 1 process(es)"
  std::string describe() const;

 private:
  DeviceAverage(std::vector<Context> devices, std::unique_ptr<backends::DeviceAllReduce> collective);
  std::vector<Context> devices_;
  std::unique_ptr<backends::DeviceAllReduce> collective_;
};

}  // namespace cannl::runtime
