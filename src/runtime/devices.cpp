// Multi-device contexts: devices with their own buffers and queues, and copies between them.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "cannl/backends/multi_device.h"
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

Context Context::on_devices(std::vector<std::shared_ptr<backends::Backend>> backends) {
  if (backends.empty()) throw RuntimeUsageError("Context::on_devices needs at least one backend");
  for (std::size_t k = 0; k < backends.size(); ++k) {
    if (backends[k] == nullptr) throw RuntimeUsageError("Context::on_devices: backend " + std::to_string(k) + " is null");
    if (backends[k]->name() != backends[0]->name())
      throw RuntimeUsageError("Context::on_devices: the devices of one context are of one backend; device 0 is " +
                              std::string(backends[0]->name()) + ", device " + std::to_string(k) + " " +
                              std::string(backends[k]->name()));
  }
  auto group = std::make_shared<DeviceGroup>();
  for (std::size_t k = 0; k < backends.size(); ++k) {
    // No worker thread: a GPU backend queues its work on its own stream, a CPU one runs it at once.
    auto state = std::make_shared<ContextState>(std::move(backends[k]));
    state->device_index = static_cast<int>(k);
    group->devices.push_back(std::move(state));
  }
  return Context(group->devices.front(), group);
}

namespace {

std::vector<int> configured_cuda_ordinals() {
  const std::string text = config::get("cuda_devices");
  std::vector<int> ordinals;
  std::size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, comma - at);
    try {
      std::size_t used = 0;
      const int ordinal = std::stoi(word, &used);
      if (used != word.size() || ordinal < 0) throw std::invalid_argument(word);
      ordinals.push_back(ordinal);
    } catch (const std::exception&) {
      throw ConfigError("config key 'cuda_devices' = '" + text + "' (from " + config::source_of("cuda_devices") +
                        "): '" + word + "' is not a device ordinal; expected a comma-separated list such as 0,1");
    }
    at = comma + 1;
  }
  return ordinals;
}

}  // namespace

Context Context::cuda_devices(std::vector<int> ordinals) {
  if (ordinals.empty()) ordinals = configured_cuda_ordinals();
  if (ordinals.empty())
    throw RuntimeUsageError("Context::cuda_devices was given no ordinals and config key 'cuda_devices' is empty");
  std::vector<std::shared_ptr<backends::Backend>> backends;
  for (int ordinal : ordinals) backends.push_back(backends::make_cuda_backend(ordinal));
  return on_devices(std::move(backends));
}

Context Context::hip_devices(std::vector<int> ordinals) {
  if (ordinals.empty()) throw RuntimeUsageError("Context::hip_devices was given no ordinals");
  std::vector<std::shared_ptr<backends::Backend>> backends;
  for (int ordinal : ordinals) backends.push_back(backends::make_hip_backend(ordinal));
  return on_devices(std::move(backends));
}

Context Context::opencl_devices(int platform, std::vector<int> devices) {
  if (devices.empty()) throw RuntimeUsageError("Context::opencl_devices was given no devices");
  std::vector<std::shared_ptr<backends::Backend>> backends;
  for (int device : devices) backends.push_back(backends::make_opencl_backend(platform, device));
  return on_devices(std::move(backends));
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
  auto transfer = [source, &target] { copy_buffer(*source, target); };
  if (!from.queue || !to.queue) {
    // The backends order their own work (GPU streams) or only one side has a worker queue: a
    // device-to-device copy where the backends have one, else wait for both and copy here. The
    // destination holds the value only once the copy is made (a wait may rethrow a failure).
    from.wait_for_device();
    to.wait_for_device();
    if (!backends::copy_between_devices(*to.backend, target, *from.backend, *source)) {
      // Through the host, which waits for both streams: a failure of their work surfaces in
      // these waits, which forget what it was to write.
      from.wait_for_backend();
      to.wait_for_backend();
      transfer();
    }
    to.mark_written(*node, ContextState::Writer::Outside);
    return;
  }
  // Read after write on the source, write after read/write on the destination: the copy runs on
  // the destination's queue after the source's queued work (a failure there fails the copy), and
  // the source's later work (which may overwrite the node) waits for the copy.
  const backends::Event source_ready = from.queue->record();
  to.queue->wait_for(source_ready);
  const backends::Event copied = to.queue->enqueue(transfer);
  from.queue->wait_for(copied);
  to.mark_written(*node, ContextState::Writer::Outside, copied);
}

}  // namespace cannl::runtime
