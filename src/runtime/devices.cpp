// Multi-device contexts: devices with their own buffers and queues, and copies between them.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "runtime/context_state.h"

namespace cannl::runtime {

struct Context::DeviceGroup {
  std::vector<std::shared_ptr<ContextState>> devices;
};

Context::Context(std::shared_ptr<ContextState> state, std::shared_ptr<DeviceGroup> group)
    : state_(std::move(state)), group_(std::move(group)) {}

Context Context::cpu_devices(int n) {
  if (n <= 0) n = static_cast<int>(config::get_int("multidev_num_devices"));
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // One backend for every device: compiling happens on the calling thread, and the C backend's
  // executables are independent of each other once linked.
  auto backend = backends::make_cc_backend();
  auto group = std::make_shared<DeviceGroup>();
  for (int k = 0; k < n; ++k) {
    auto state = std::make_shared<ContextState>(backend);
    state->device_index = k;
    state->queue = std::make_unique<backends::DeviceQueue>("cc device " + std::to_string(k));
    group->devices.push_back(std::move(state));
  }
  return Context(group->devices.front(), group);
}

int Context::num_devices() const { return group_ ? static_cast<int>(group_->devices.size()) : 1; }

int Context::device_index() const { return state_->device_index; }

Context Context::device(int k) const {
  if (k < 0 || k >= num_devices())
    throw RuntimeUsageError("device " + std::to_string(k) + " does not exist: this context holds " +
                            std::to_string(num_devices()) + " device(s), numbered from 0");
  if (!group_) return *this;
  return Context(group_->devices[static_cast<std::size_t>(k)], group_);
}

namespace {

void copy_buffer(backends::Buffer& from, backends::Buffer& to) {
  if (from.host_data() != nullptr && to.host_data() != nullptr) {
    std::memcpy(to.host_data(), from.host_data(), from.size());
    return;
  }
  std::vector<std::byte> bytes(from.size());
  from.read(bytes);
  to.write(bytes);
}

}  // namespace

void Context::copy(const Context& src, Context& dst, const ir::NodeRef& node) {
  if (!node) throw RuntimeUsageError("Context::copy was given a null node");
  ContextState& from = *src.state_;
  ContextState& to = *dst.state_;
  if (&from == &to) return;
  backends::Buffer* source = from.find_buffer(*node);
  if (source == nullptr || !from.initialized.contains(node->id))
    throw UninitializedError("Context::copy: node " + describe_node(*node) + " holds no value on device " +
                             std::to_string(from.device_index) +
                             "; run the routine that writes it there (or upload it) first");
  backends::Buffer& target = to.ensure_buffer(node);
  to.initialized.insert(node->id);
  auto transfer = [source, &target] { copy_buffer(*source, target); };
  if (!from.queue || !to.queue) {
    // Only one side queues its work: wait for both, then copy here.
    from.wait_for_device();
    to.wait_for_device();
    transfer();
    return;
  }
  // Read after write on the source, write after read/write on the destination: the copy runs on
  // the destination's queue after the source's queued work, and the source's later work (which
  // may overwrite the node) waits for the copy.
  const backends::Event source_ready = from.queue->record();
  to.queue->wait_for(source_ready);
  from.queue->wait_for(to.queue->enqueue(transfer));
}

}  // namespace cannl::runtime
