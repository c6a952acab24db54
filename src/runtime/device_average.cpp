// Averaging nodes across devices and processes on the devices (see device_average.h).
#include "cannl/runtime/device_average.h"

#include <cmath>

#include "cannl/backends/multi_device.h"
#include "cannl/support/error.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

namespace {

/// Sends rank 0's bytes to every rank with the one collective a Communicator has: every other
/// rank contributes zeros to a sum in doubles, which holds each byte exactly.
void broadcast_from_rank0(Communicator& communicator, std::span<std::byte> bytes) {
  std::vector<double> values(bytes.size(), 0.0);
  if (communicator.rank() == 0)
    for (std::size_t i = 0; i < bytes.size(); ++i) values[i] = static_cast<double>(std::to_integer<unsigned>(bytes[i]));
  communicator.allreduce_sum(std::span<double>(values), "the NCCL unique id from rank 0");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (values[i] < 0 || values[i] > 255 || values[i] != std::floor(values[i]))
      throw DistributedError("the NCCL unique id from rank 0 arrived garbled (byte " + std::to_string(i) +
                             " summed to " + std::to_string(values[i]) + "): does every rank call it once?");
    bytes[i] = static_cast<std::byte>(static_cast<unsigned>(values[i]));
  }
}

}  // namespace

DeviceAverage::DeviceAverage(std::vector<Context> devices, std::unique_ptr<backends::DeviceAllReduce> collective)
    : devices_(std::move(devices)), collective_(std::move(collective)) {}

DeviceAverage::~DeviceAverage() = default;

std::shared_ptr<DeviceAverage> DeviceAverage::open_nccl(std::vector<Context> devices,
                                                        std::shared_ptr<Communicator> communicator) {
  if (!communicator) communicator = single_process_communicator();
  std::vector<backends::Backend*> backends;
  for (const Context& device : devices) backends.push_back(device.state_->backend.get());
  backends::DeviceAllReduceRanks ranks{communicator->rank(), communicator->size(),
                                       [communicator](std::span<std::byte> bytes) { broadcast_from_rank0(*communicator, bytes); }};
  return over(std::move(devices), backends::open_nccl_all_reduce(backends, ranks));
}

std::shared_ptr<DeviceAverage> DeviceAverage::over(std::vector<Context> devices,
                                                   std::unique_ptr<backends::DeviceAllReduce> collective) {
  if (devices.empty() || collective == nullptr)
    throw RuntimeUsageError("DeviceAverage::over needs devices and a collective");
  return std::shared_ptr<DeviceAverage>(new DeviceAverage(std::move(devices), std::move(collective)));
}

void DeviceAverage::run(std::span<const ir::NodeRef> nodes, std::string_view what) {
  if (nodes.empty()) return;
  const ir::DType dtype = nodes.front()->dtype;
  if (dtype != ir::DType::F32 && dtype != ir::DType::F64)
    throw RuntimeUsageError("DeviceAverage of " + std::string(what) + ": node " + describe_node(*nodes.front()) +
                            " is neither f32 nor f64");
  // A device with a worker queue (cpu_devices) may still be running routines that write these
  // nodes, and the collective reads and writes them from here: wait for them (a failure of that
  // work surfaces here, its outputs no longer initialized). GPU streams order the collective
  // after their work themselves, and have no such queue.
  for (auto& device : devices_) device.state_->wait_for_device();
  std::vector<std::vector<backends::Buffer*>> buffers(devices_.size());
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    ContextState& state = *devices_[d].state_;
    for (const auto& node : nodes) {
      if (node->dtype != dtype)
        throw RuntimeUsageError("DeviceAverage of " + std::string(what) + ": the nodes mix dtypes (" +
                                describe_node(*node) + " after " + describe_node(*nodes.front()) + ")");
      backends::Buffer* buffer = state.find_buffer(*node);
      if (buffer == nullptr || !state.initialized.contains(node->id))
        // Named by its place among the averaged devices: contexts opened one by one are each
        // their own device 0.
        throw UninitializedError("DeviceAverage of " + std::string(what) + ": node " + describe_node(*node) +
                                 " holds no value on device " + std::to_string(d) + " of " +
                                 std::to_string(devices_.size()) + " (" +
                                 std::string(state.backend->name()) + "): it " +
                                 state.why_uninitialized(node->id));
      buffers[d].push_back(buffer);
    }
  }
  try {
    collective_->average(buffers, dtype == ir::DType::F32 ? backends::ReduceType::F32 : backends::ReduceType::F64, what);
  } catch (...) {
    // The collective may have averaged some buffers (or devices) and not others: the nodes hold
    // neither their values nor the mean, as a run's outputs after it threw.
    for (auto& device : devices_)
      for (const auto& node : nodes) device.state_->forget_value(node->id);
    throw;
  }
  // New values: packed copies of these nodes (routine_data.h, Packing) must be made again.
  for (auto& device : devices_)
    for (const auto& node : nodes) device.state_->mark_written(*node, ContextState::Writer::Outside);
}

std::string DeviceAverage::describe() const { return collective_->describe(); }

}  // namespace cannl::runtime
