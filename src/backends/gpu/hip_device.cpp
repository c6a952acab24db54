// The HIP device (see device.h): the HIP runtime on one device, one non-blocking stream, kernels
// compiled by hiprtc to a code object for the device's architecture (its gfx name) and loaded
// with hipModuleLoadData.
//
// Every public call makes the device current first: the runtime may call from any thread, and a
// current device is per thread. Host copies are enqueued on the stream and then waited for, so
// they are ordered after every kernel before them (as on the CUDA device).
#include "backends/gpu/hip_device.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "backends/gpu/hiprtc_api.h"
#include "backends/gpu/launch_checks.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/param_array.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

using namespace hip;

// The device and the stream of one Device, shared by the device and everything it made
// (buffers, modules, events); the stream is destroyed when the last of them goes.
class HipQueue {
 public:
  HipQueue(const HipRuntimeApi& api, int ordinal) : api_(api), ordinal_(ordinal) {
    int count = 0;
    api.check(api.hipGetDeviceCount(&count), "hipGetDeviceCount");
    if (ordinal < 0 || ordinal >= count)
      throw BackendUnavailable("no HIP device " + std::to_string(ordinal) + ": the runtime (" + api.library +
                               ") sees " + std::to_string(count) + " device(s)");
    make_current();
    api.check(api.hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  }
  ~HipQueue() {
    make_current_quietly();
    api_.hipStreamDestroy(stream_);
  }
  HipQueue(const HipQueue&) = delete;
  HipQueue& operator=(const HipQueue&) = delete;

  const HipRuntimeApi& api() const { return api_; }
  int ordinal() const { return ordinal_; }
  hipStream_t stream() const { return stream_; }
  PendingKernels& pending() { return pending_; }

  /// Lets this device read `peer`'s memory directly (once per peer). False when the hardware
  /// cannot (no xGMI or PCIe peer path between the two GPUs).
  bool reach(const HipQueue& peer) {
    if (peer.ordinal_ == ordinal_ || reachable_.contains(peer.ordinal_)) return true;
    int can = 0;
    api_.check(api_.hipDeviceCanAccessPeer(&can, ordinal_, peer.ordinal_), "hipDeviceCanAccessPeer");
    if (can == 0) return false;
    make_current();
    const hipError_t enabled = api_.hipDeviceEnablePeerAccess(peer.ordinal_, 0);
    if (enabled != hipErrorPeerAccessAlreadyEnabled) api_.check(enabled, "hipDeviceEnablePeerAccess");
    reachable_.insert(peer.ordinal_);
    return true;
  }

  void make_current() const { api_.check(api_.hipSetDevice(ordinal_), "hipSetDevice"); }
  /// For destructors, which must not throw (they may run after a kernel fault or at exit).
  void make_current_quietly() const { api_.hipSetDevice(ordinal_); }
  /// Checks a call that may report a failure of earlier work on the stream: the message names
  /// the kernels enqueued since the last synchronization.
  void check_queue(hipError_t result, const char* call, const std::string& doing = "") const {
    if (result == hipSuccess) return;
    const std::string pending = pending_.describe();
    api_.check(result, call, doing + (doing.empty() || pending.empty() ? "" : "; ") + pending);
  }
  void synchronize() {
    check_queue(api_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
    pending_.clear();
  }

 private:
  const HipRuntimeApi& api_;
  int ordinal_;
  hipStream_t stream_ = nullptr;
  PendingKernels pending_;
  std::set<int> reachable_;
};

class HipBuffer final : public Buffer {
 public:
  HipBuffer(std::shared_ptr<HipQueue> queue, std::size_t bytes) : queue_(std::move(queue)), size_(bytes) {
    const auto& api = queue_->api();
    // A zero-byte buffer still gets an address of its own.
    const std::size_t allocated = std::max<std::size_t>(bytes, 1);
    api.check(api.hipMalloc(&pointer_, allocated), "hipMalloc", "allocating " + std::to_string(bytes) + " bytes");
    // Zeroed in stream order: whatever uses the buffer is enqueued after this.
    const hipError_t zeroed = api.hipMemsetD8Async(pointer_, 0, allocated, queue_->stream());
    if (zeroed != hipSuccess) {
      api.hipFree(pointer_);
      queue_->check_queue(zeroed, "hipMemsetD8Async");
    }
  }
  ~HipBuffer() override {
    // Work still using the buffer finishes first (hipFree does not wait for other streams).
    queue_->make_current_quietly();
    queue_->api().hipStreamSynchronize(queue_->stream());
    queue_->api().hipFree(pointer_);
  }
  HipBuffer(const HipBuffer&) = delete;
  HipBuffer& operator=(const HipBuffer&) = delete;

  std::size_t size() const override { return size_; }

  void read(std::span<std::byte> out) const override {
    check_size(out.size(), "read");
    queue_->make_current();
    if (size_ > 0)
      queue_->check_queue(queue_->api().hipMemcpyDtoHAsync(out.data(), pointer_, size_, queue_->stream()),
                          "hipMemcpyDtoHAsync");
    queue_->synchronize();
  }
  void write(std::span<const std::byte> in) override {
    check_size(in.size(), "write");
    queue_->make_current();
    // hipMemcpyHtoDAsync takes a non-const source; it only reads it.
    if (size_ > 0)
      queue_->check_queue(queue_->api().hipMemcpyHtoDAsync(pointer_, const_cast<std::byte*>(in.data()), size_,
                                                           queue_->stream()),
                          "hipMemcpyHtoDAsync");
    queue_->synchronize();
  }

  void* pointer() const { return pointer_; }
  const HipQueue* queue() const { return queue_.get(); }

 private:
  void check_size(std::size_t bytes, const char* what) const {
    if (bytes != size_)
      throw RuntimeUsageError(std::string("HIP buffer ") + what + ": the host side has " + std::to_string(bytes) +
                              " bytes but the buffer has " + std::to_string(size_));
  }
  std::shared_ptr<HipQueue> queue_;
  std::size_t size_;
  void* pointer_ = nullptr;
};

// `buffer` as one of `queue`'s buffers (RuntimeUsageError otherwise).
const HipBuffer& own_buffer(const HipQueue& queue, const Buffer& buffer, const char* what) {
  const auto* hip = dynamic_cast<const HipBuffer*>(&buffer);
  if (hip == nullptr || hip->queue() != &queue)
    throw RuntimeUsageError(std::string("HIP ") + what + ": the buffer is not one of this device's");
  return *hip;
}

// Writes the values of `args` (a launch of `kernel` on `queue`) into `out`: device pointers as
// void*, statics as long long (both 8 bytes).
void resolve_args(const HipQueue& queue, const std::string& kernel, std::span<const KernelArg> args, ParamArray& out) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (const auto* buffer = std::get_if<const Buffer*>(&args[k])) {
      if (*buffer == nullptr)
        throw RuntimeUsageError("HIP launch of " + kernel + ": argument " + std::to_string(k) + " is null");
      out.values()[k] = reinterpret_cast<unsigned long long>(own_buffer(queue, **buffer, "launch argument").pointer());
    } else {
      out.values()[k] = static_cast<unsigned long long>(std::get<std::int64_t>(args[k]));
    }
  }
}

// A launch sequence as an instantiated HIP graph (see HipDevice::build_graph), as on CUDA.
class HipGraph final : public LaunchGraph {
 public:
  // Per step: its kernel node (nullptr for an empty grid or a memset) and the launch's parameters
  // less the argument array.
  struct KernelNode {
    hipGraphNode_t node = nullptr;
    hipKernelNodeParams params;
    std::string name;
    std::size_t arity = 0;
  };
  HipGraph(std::shared_ptr<HipQueue> queue, hipGraph_t graph, hipGraphExec_t exec, std::vector<KernelNode> nodes,
           std::string label)
      : queue_(std::move(queue)), graph_(graph), exec_(exec), nodes_(std::move(nodes)), label_(std::move(label)) {}
  ~HipGraph() override {
    // HIP does not promise to keep a destroyed graph's launches running: they finish first.
    queue_->make_current_quietly();
    queue_->api().hipStreamSynchronize(queue_->stream());
    queue_->api().hipGraphExecDestroy(exec_);
    queue_->api().hipGraphDestroy(graph_);
  }
  HipGraph(const HipGraph&) = delete;
  HipGraph& operator=(const HipGraph&) = delete;

  bool set_args(std::size_t step, std::span<const KernelArg> args, std::string& why) override {
    KernelNode& k = nodes_.at(step);
    if (k.node == nullptr) return true;  // an empty grid: no node
    internal_check(args.size() == k.arity, [&] { return "graph step " + k.name + " set with another argument count"; });
    ParamArray values(args.size());
    resolve_args(*queue_, k.name, args, values);
    hipKernelNodeParams p = k.params;
    p.kernelParams = values.pointers();  // the runtime copies the values
    queue_->make_current();
    const hipError_t result = queue_->api().hipGraphExecKernelNodeSetParams(exec_, k.node, &p);
    if (result == hipSuccess) return true;
    why = "hipGraphExecKernelNodeSetParams failed: " + queue_->api().describe(result);
    return false;
  }
  void launch() override {
    queue_->make_current();
    const hipError_t result = queue_->api().hipGraphLaunch(exec_, queue_->stream());
    if (result != hipSuccess) queue_->check_queue(result, "hipGraphLaunch", "launching " + label_);
    queue_->pending().add(label_);
  }

 private:
  std::shared_ptr<HipQueue> queue_;
  hipGraph_t graph_;  // kept: its nodes name those of exec_ whose arguments set_args updates
  hipGraphExec_t exec_;
  std::vector<KernelNode> nodes_;
  std::string label_;
};

class HipModule final : public Module {
 public:
  HipModule(std::shared_ptr<HipQueue> queue, hipModule_t module, std::vector<std::string> names, bool from_cache)
      : queue_(std::move(queue)), module_(module), names_(std::move(names)), from_cache_(from_cache) {}
  ~HipModule() override {
    // Its kernels may still be running.
    queue_->make_current_quietly();
    queue_->api().hipStreamSynchronize(queue_->stream());
    queue_->api().hipModuleUnload(module_);
  }
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;

  const std::vector<std::string>& kernel_names() const override { return names_; }
  bool from_cache() const override { return from_cache_; }
  const HipQueue* queue() const { return queue_.get(); }
  std::vector<hipFunction_t>& functions() { return functions_; }

 private:
  std::shared_ptr<HipQueue> queue_;
  hipModule_t module_;
  std::vector<std::string> names_;
  std::vector<hipFunction_t> functions_;
  bool from_cache_;
};

class HipEvent final : public Event {
 public:
  HipEvent(std::shared_ptr<HipQueue> queue, bool timing) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    api.check(api.hipEventCreateWithFlags(&event_, timing ? 0u : hipEventDisableTiming), "hipEventCreateWithFlags");
    const hipError_t recorded = api.hipEventRecord(event_, queue_->stream());
    if (recorded != hipSuccess) {
      api.hipEventDestroy(event_);
      queue_->check_queue(recorded, "hipEventRecord");
    }
  }
  ~HipEvent() override {
    queue_->make_current_quietly();
    queue_->api().hipEventDestroy(event_);
  }
  HipEvent(const HipEvent&) = delete;
  HipEvent& operator=(const HipEvent&) = delete;

  hipEvent_t handle() const { return event_; }

  void wait() override {
    queue_->make_current();
    queue_->check_queue(queue_->api().hipEventSynchronize(event_), "hipEventSynchronize");
  }
  double milliseconds_since(const Event& start) override {
    const auto* begin = dynamic_cast<const HipEvent*>(&start);
    if (begin == nullptr) return -1;
    wait();
    float ms = 0;
    queue_->check_queue(queue_->api().hipEventElapsedTime(&ms, begin->event_, event_), "hipEventElapsedTime");
    return ms;
  }

 private:
  std::shared_ptr<HipQueue> queue_;
  hipEvent_t event_ = nullptr;
};

int attribute(const HipRuntimeApi& api, int ordinal, int attribute) {
  int value = 0;
  api.check(api.hipDeviceGetAttribute(&value, attribute, ordinal), "hipDeviceGetAttribute",
            "attribute " + std::to_string(attribute));
  return value;
}

// The launch limits, with the wave size and the LDS a block may declare: the block reduction's
// shuffles follow the wave, and check_hardware_limits the LDS.
ir::GpuLimits query_limits(const HipRuntimeApi& api, int ordinal) {
  ir::GpuLimits limits;
  limits.max_threads_per_block = attribute(api, ordinal, hipDeviceAttributeMaxThreadsPerBlock);
  for (int slot = 0; slot < 3; ++slot) {
    limits.max_block_dims[static_cast<std::size_t>(slot)] = attribute(api, ordinal, hipDeviceAttributeMaxBlockDimX + slot);
    limits.max_grid_dims[static_cast<std::size_t>(slot)] = attribute(api, ordinal, hipDeviceAttributeMaxGridDimX + slot);
  }
  limits.max_shared_bytes = attribute(api, ordinal, hipDeviceAttributeMaxSharedMemoryPerBlock);
  limits.warp_size = attribute(api, ordinal, hipDeviceAttributeWarpSize);
  limits.compute_units = attribute(api, ordinal, hipDeviceAttributeMultiprocessorCount);
  return limits;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

class HipDevice final : public Device {
 public:
  HipDevice(std::shared_ptr<HipQueue> queue, const HipOptions& options) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    const int ordinal = queue_->ordinal();
    limits_ = query_limits(api, ordinal);
    hipDevice_t device = 0;
    api.check(api.hipDeviceGet(&device, ordinal), "hipDeviceGet");
    std::array<char, 256> name{};
    api.check(api.hipDeviceGetName(name.data(), static_cast<int>(name.size()) - 1, device), "hipDeviceGetName");
    name_ = name.data();
    std::vector<char> properties(kPropertiesBytes, '\0');
    api.check(api.hipGetDeviceProperties(properties.data(), ordinal), "hipGetDeviceProperties");
    const char* gcn = properties.data() + kPropertiesArchOffset;
    arch_ = gfx_arch_of(std::string(gcn, strnlen(gcn, 256)));
    if (arch_.empty())
      throw BackendUnavailable("HIP device " + std::to_string(ordinal) + " (" + name_ + ", runtime " + api.library +
                               "): cannot tell its GPU architecture from hipGetDeviceProperties (a runtime newer "
                               "than cannl knows?)");
    // hiprtc is needed for every kernel: a runtime without it is a backend that cannot run anything.
    hiprtc_version_ = hiprtc_version();
    options_ = hiprtc_options(arch_);
    if (options.printf_fifo_bytes > 0) set_printf_fifo(options.printf_fifo_bytes);
  }

  std::string_view api() const override { return "hip"; }
  std::string description() const override {
    const int version = queue_->api().runtime_version;
    return name_ + " (" + arch_ + ", wave" + std::to_string(limits_.warp_size) + "), HIP runtime " +
           std::to_string(version / 10000000) + "." + std::to_string(version / 100000 % 100) + ", hiprtc " +
           hiprtc_version_;
  }
  const ir::GpuLimits& limits() const override { return limits_; }
  std::string cache_tag() const override {
    return "hip " + arch_ + " hiprtc " + hiprtc_version_ + " runtime " + std::to_string(queue_->api().runtime_version) +
           " options " + joined(options_);
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    queue_->make_current();
    return std::make_unique<HipBuffer>(queue_, bytes);
  }
  void fill_zero(Buffer& buffer) override {
    const auto& b = own(buffer, "fill_zero");
    queue_->make_current();
    queue_->check_queue(queue_->api().hipMemsetD8Async(b.pointer(), 0, std::max<std::size_t>(b.size(), 1),
                                                       queue_->stream()),
                        "hipMemsetD8Async");
  }
  void copy(Buffer& dst, const Buffer& src) override {
    const auto& to = own(dst, "copy (destination)");
    const auto& from = own(src, "copy (source)");
    if (to.size() != from.size())
      throw RuntimeUsageError("HIP copy: the destination has " + std::to_string(to.size()) + " bytes, the source " +
                              std::to_string(from.size()));
    queue_->make_current();
    if (to.size() > 0)
      queue_->check_queue(queue_->api().hipMemcpyDtoDAsync(to.pointer(), from.pointer(), to.size(), queue_->stream()),
                          "hipMemcpyDtoDAsync");
  }

  std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                               const std::filesystem::path& cache_dir) override;
  void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
              std::span<const KernelArg> args) override;
  bool has_graphs() const override { return true; }
  std::unique_ptr<LaunchGraph> build_graph(Module& module, std::span<const LaunchStep> steps,
                                           const std::string& label, std::string& why) override;
  std::pair<std::uint64_t, std::size_t> graph_key(const Buffer& buffer) const override {
    const HipBuffer& b = own(buffer, "graph argument");
    return {reinterpret_cast<std::uint64_t>(b.pointer()), b.size()};
  }
  std::unique_ptr<Event> record(bool timing) override {
    queue_->make_current();
    return std::make_unique<HipEvent>(queue_, timing);
  }
  void synchronize() override {
    queue_->make_current();
    queue_->synchronize();
  }

  HipQueue& queue() const { return *queue_; }
  const HipBuffer& own(const Buffer& buffer, const char* what) const { return own_buffer(*queue_, buffer, what); }
  /// `module` as one of this device's, with kernel `kernel` (RuntimeUsageError otherwise).
  HipModule& own_kernel(Module& module, std::size_t kernel, const char* what) const {
    auto* hip = dynamic_cast<HipModule*>(&module);
    if (hip == nullptr || hip->queue() != queue_.get())
      throw RuntimeUsageError(std::string("HIP ") + what + ": the module was not loaded on this device");
    if (kernel >= hip->functions().size())
      throw RuntimeUsageError(std::string("HIP ") + what + ": kernel " + std::to_string(kernel) + " of a module of " +
                              std::to_string(hip->functions().size()));
    return *hip;
  }

 private:
  void set_printf_fifo(std::size_t bytes) const {
    const auto& api = queue_->api();
    if (api.hipDeviceSetLimit == nullptr) {
      logging::warn("hip_printf_fifo_size: the HIP runtime " + api.library +
                    " has no hipDeviceSetLimit (before ROCm 5.3); the printf buffer keeps its size");
      return;
    }
    queue_->make_current();
    api.check(api.hipDeviceSetLimit(hipLimitPrintfFifoSize, bytes), "hipDeviceSetLimit",
              "hip_printf_fifo_size=" + std::to_string(bytes));
  }
  // The module in `image` (a code object), or the runtime's complaint in `problem`.
  hipModule_t load_image(const std::string& image, std::string& problem) const {
    hipModule_t module = nullptr;
    const hipError_t result = queue_->api().hipModuleLoadData(&module, image.data());
    if (result == hipSuccess) return module;
    problem = "hipModuleLoadData failed: " + queue_->api().describe(result);
    return nullptr;
  }
  std::shared_ptr<HipModule> resolve(hipModule_t module, const std::vector<std::string>& kernels, bool from_cache) const {
    // Owned from here on: a missing kernel unloads the module with it.
    auto out = std::make_shared<HipModule>(queue_, module, kernels, from_cache);
    for (const auto& name : kernels) {
      hipFunction_t function = nullptr;
      const hipError_t result = queue_->api().hipModuleGetFunction(&function, module, name.c_str());
      if (result != hipSuccess)
        throw CompileError("the compiled HIP module has no kernel " + name + " (" + queue_->api().describe(result) +
                           "); kernels must be declared extern \"C\" __global__");
      out->functions().push_back(function);
    }
    return out;
  }

  std::shared_ptr<HipQueue> queue_;
  ir::GpuLimits limits_;
  std::string arch_, name_, hiprtc_version_;
  std::vector<std::string> options_;
};

std::shared_ptr<Module> HipDevice::load(const std::string& source, const std::vector<std::string>& kernels,
                                        const std::filesystem::path& cache_dir) {
  queue_->make_current();
  const std::string name = kernels.empty() ? "module" : kernels.front();
  const ModuleCacheEntry entry = module_cache_entry(cache_dir, name, "hsaco", source + "\n" + cache_tag());
  std::string problem;
  if (auto cached = read_cached_module(entry)) {
    if (hipModule_t module = load_image(*cached, problem)) return resolve(module, kernels, true);
    discard_cached_module(entry, "the HIP runtime refused it: " + problem);
  }
  const HiprtcOutput out = hiprtc_compile_program(source, options_, name + ".hip");
  hipModule_t module = load_image(out.code, problem);
  if (module == nullptr)
    throw CompileError("the HIP runtime cannot load what hiprtc " + hiprtc_version_ + " compiled for " + arch_ + " (" +
                       name + "): " + problem);
  auto loaded = resolve(module, kernels, false);
  store_cached_module(entry, out.code);
  return loaded;
}

void HipDevice::launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
                       std::span<const KernelArg> args) {
  HipModule& hip = own_kernel(module, kernel, "launch");
  const std::string& name = hip.kernel_names()[kernel];
  if (!launchable(geometry, limits_, name)) return;
  ParamArray params(args.size());
  resolve_args(*queue_, name, args, params);
  queue_->make_current();
  const auto& g = geometry.grid;
  const auto& b = geometry.block;
  const hipError_t result = queue_->api().hipModuleLaunchKernel(
      hip.functions()[kernel], static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2]),
      static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2]), 0, queue_->stream(),
      params.pointers(), nullptr);
  if (result != hipSuccess) queue_->check_queue(result, "hipModuleLaunchKernel", "launching " + name);
  queue_->pending().add(name);
}

// Built explicitly, one chain of nodes, for the reasons given at CudaDevice::build_graph.
std::unique_ptr<LaunchGraph> HipDevice::build_graph(Module& module, std::span<const LaunchStep> steps,
                                                    const std::string& label, std::string& why) {
  const auto& api = queue_->api();
  if (!api.missing_graph_entry_points.empty()) {
    why = "the HIP runtime " + api.library + " lacks " + api.missing_graph_entry_points;
    return nullptr;
  }
  // Every step checked as launch checks it before the runtime sees any.
  std::vector<HipGraph::KernelNode> nodes(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    if (step.kernel == LaunchStep::kZeroFill) {
      if (step.args.size() != 1 || !std::holds_alternative<const Buffer*>(step.args[0]))
        throw InternalError("a zero-fill step of " + label + " takes one buffer");
      continue;
    }
    HipModule& hip = own_kernel(module, step.kernel, "graph");
    if (!launchable(step.geometry, limits_, hip.kernel_names()[step.kernel])) continue;
    nodes[k].name = hip.kernel_names()[step.kernel];
    nodes[k].arity = step.args.size();
    auto& p = nodes[k].params;
    p.func = hip.functions()[step.kernel];
    const auto& g = step.geometry.grid;
    const auto& b = step.geometry.block;
    p.gridDim = {static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2])};
    p.blockDim = {static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2])};
  }
  queue_->make_current();
  auto failed = [&](const char* call, hipError_t result) {
    why = std::string(call) + " failed: " + api.describe(result);
    return nullptr;
  };
  hipGraph_t graph = nullptr;
  if (const hipError_t r = api.hipGraphCreate(&graph, 0); r != hipSuccess) return failed("hipGraphCreate", r);
  // Owned by the HipGraph once instantiated: its nodes are the handles for updating the instance.
  std::unique_ptr<ihipGraph, hipError_t (*)(hipGraph_t)> owned(graph, api.hipGraphDestroy);
  hipGraphNode_t previous = nullptr;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    hipGraphNode_t node = nullptr;
    const std::size_t dependencies = previous == nullptr ? 0 : 1;
    if (step.kernel == LaunchStep::kZeroFill) {
      const HipBuffer& b = own(*std::get<const Buffer*>(step.args[0]), "graph zero fill");
      hipMemsetParams memset;
      memset.dst = b.pointer();
      memset.width = std::max<std::size_t>(b.size(), 1);  // as fill_zero
      if (const hipError_t r = api.hipGraphAddMemsetNode(&node, graph, &previous, dependencies, &memset); r != hipSuccess)
        return failed("hipGraphAddMemsetNode", r);
    } else {
      if (nodes[k].params.func == nullptr) continue;  // an empty grid launches nothing
      ParamArray params(step.args.size());
      resolve_args(*queue_, nodes[k].name, step.args, params);
      hipKernelNodeParams p = nodes[k].params;
      p.kernelParams = params.pointers();  // the runtime copies the values
      if (const hipError_t r = api.hipGraphAddKernelNode(&node, graph, &previous, dependencies, &p); r != hipSuccess)
        return failed("hipGraphAddKernelNode", r);
      nodes[k].node = node;
    }
    previous = node;
  }
  hipGraphExec_t exec = nullptr;
  if (const hipError_t r = api.hipGraphInstantiateWithFlags(&exec, graph, 0); r != hipSuccess)
    return failed("hipGraphInstantiateWithFlags", r);
  return std::make_unique<HipGraph>(queue_, owned.release(), exec, std::move(nodes), label);
}

// Makes `waiting`'s stream wait for everything enqueued on `done`'s stream so far.
void stream_waits_for(HipDevice& waiting, HipDevice& done) {
  const std::unique_ptr<Event> event = done.record(false);
  HipQueue& queue = waiting.queue();
  queue.make_current();
  queue.check_queue(queue.api().hipStreamWaitEvent(queue.stream(), static_cast<const HipEvent&>(*event).handle(), 0),
                    "hipStreamWaitEvent");
}

}  // namespace

bool hip_peer_copy(Device& dst_device, Buffer& dst, Device& src_device, const Buffer& src) {
  auto* to = dynamic_cast<HipDevice*>(&dst_device);
  auto* from = dynamic_cast<HipDevice*>(&src_device);
  if (to == nullptr || from == nullptr || &to->queue().api() != &from->queue().api()) return false;
  const HipBuffer& target = to->own(dst, "peer copy (destination)");
  const HipBuffer& source = from->own(src, "peer copy (source)");
  if (target.size() != source.size())
    throw RuntimeUsageError("HIP peer copy: the destination has " + std::to_string(target.size()) +
                            " bytes, the source " + std::to_string(source.size()));
  HipQueue& dst_queue = to->queue();
  HipQueue& src_queue = from->queue();
  if (!dst_queue.reach(src_queue)) return false;
  if (target.size() == 0) return true;
  // As on CUDA: after the source's work, and before the source's later work.
  stream_waits_for(*to, *from);
  dst_queue.make_current();
  dst_queue.check_queue(dst_queue.api().hipMemcpyPeerAsync(target.pointer(), dst_queue.ordinal(), source.pointer(),
                                                           src_queue.ordinal(), target.size(), dst_queue.stream()),
                        "hipMemcpyPeerAsync");
  stream_waits_for(*from, *to);
  return true;
}

std::string gfx_arch_of(const std::string& gcn_arch_name) {
  const std::string arch = gcn_arch_name.substr(0, gcn_arch_name.find(':'));
  if (arch.size() < 4 || arch.rfind("gfx", 0) != 0) return "";
  for (char c : arch.substr(3))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  return arch;
}

std::shared_ptr<Device> open_hip_on(const HipRuntimeApi& api, int ordinal, const HipOptions& options) {
  return std::make_shared<HipDevice>(std::make_shared<HipQueue>(api, ordinal), options);
}

std::shared_ptr<Device> open_hip(int ordinal, std::size_t printf_fifo_bytes) {
  return open_hip_on(HipRuntimeApi::get(), ordinal, {.printf_fifo_bytes = printf_fifo_bytes});
}

}  // namespace cannl::backends::gpu
