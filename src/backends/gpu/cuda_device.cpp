// The CUDA device (see device.h): the driver API on the device's primary context, one
// non-blocking stream, kernels compiled by NVRTC to a cubin for the device's architecture.
//
// Every public call makes the primary context current first: the runtime may call from any
// thread, and a context is current per thread. Host copies are enqueued on the stream and then
// waited for, so they are ordered after every kernel before them (the legacy synchronous copies
// would not wait for a non-blocking stream).
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/launch_checks.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/nvrtc_api.h"
#include "backends/gpu/param_array.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu {

namespace {

using namespace cuda;

// The primary context of one device and the stream of one Device, shared by the device and
// everything it made (buffers, modules, events); released when the last of them goes.
class CudaQueue {
 public:
  CudaQueue(const CudaDriverApi& api, int ordinal) : api_(api) {
    int count = 0;
    api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count)
      throw BackendUnavailable("no CUDA device " + std::to_string(ordinal) + ": the driver (" + api.library +
                               ") sees " + std::to_string(count) + " device(s)");
    api.check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    api.check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    try {
      make_current();
      api.check(api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    } catch (...) {
      api.cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }
  ~CudaQueue() {
    make_current_quietly();
    api_.cuStreamDestroy(stream_);
    api_.cuDevicePrimaryCtxRelease(device_);
  }
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

  const CudaDriverApi& api() const { return api_; }
  CUdevice device() const { return device_; }
  CUcontext context() const { return context_; }
  CUstream stream() const { return stream_; }
  PendingKernels& pending() { return pending_; }

  /// Lets this context read `peer`'s memory directly (once per peer). False when the hardware
  /// cannot (no NVLink or PCIe peer path between the two devices).
  bool reach(const CudaQueue& peer) {
    if (peer.context_ == context_ || reachable_.contains(peer.context_)) return true;
    int can = 0;
    api_.check(api_.cuDeviceCanAccessPeer(&can, device_, peer.device_), "cuDeviceCanAccessPeer");
    if (can == 0) return false;
    make_current();
    const CUresult enabled = api_.cuCtxEnablePeerAccess(peer.context_, 0);
    if (enabled != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) api_.check(enabled, "cuCtxEnablePeerAccess");
    reachable_.insert(peer.context_);
    return true;
  }

  void make_current() const { api_.check(api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }
  /// For destructors, which must not throw: they may run after a kernel fault poisoned the
  /// context, or at exit after the driver shut down; what they release goes with the context.
  void make_current_quietly() const { api_.cuCtxSetCurrent(context_); }
  /// Checks a call that may report a failure of earlier work on the stream: the message names
  /// the kernels enqueued since the last synchronization.
  void check_queue(CUresult result, const char* call, const std::string& doing = "") const {
    if (result == CUDA_SUCCESS) return;
    const std::string pending = pending_.describe();
    api_.check(result, call, doing + (doing.empty() || pending.empty() ? "" : "; ") + pending);
  }
  /// Waits for the stream to drain.
  void synchronize() {
    check_queue(api_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    pending_.clear();
  }

 private:
  const CudaDriverApi& api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  PendingKernels pending_;
  std::set<CUcontext> reachable_;
};

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(std::shared_ptr<CudaQueue> queue, std::size_t bytes) : queue_(std::move(queue)), size_(bytes) {
    const auto& api = queue_->api();
    // A zero-byte buffer still gets an address of its own (cuMemAlloc rejects 0 bytes).
    const std::size_t allocated = std::max<std::size_t>(bytes, 1);
    api.check(api.cuMemAlloc(&pointer_, allocated), "cuMemAlloc_v2", "allocating " + std::to_string(bytes) + " bytes");
    // Zeroed in stream order: whatever uses the buffer is enqueued after this.
    const CUresult zeroed = api.cuMemsetD8Async(pointer_, 0, allocated, queue_->stream());
    if (zeroed != CUDA_SUCCESS) {
      api.cuMemFree(pointer_);
      queue_->check_queue(zeroed, "cuMemsetD8Async");
    }
  }
  ~CudaBuffer() override {
    // cuMemFree only "may" wait for the work still using the buffer: drain the stream first.
    // Buffers live as long as the routines using them, so this wait is rare.
    queue_->make_current_quietly();
    queue_->api().cuStreamSynchronize(queue_->stream());
    queue_->api().cuMemFree(pointer_);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  std::size_t size() const override { return size_; }

  void read(std::span<std::byte> out) const override {
    check_size(out.size(), "read");
    queue_->make_current();
    if (size_ > 0)
      queue_->check_queue(queue_->api().cuMemcpyDtoHAsync(out.data(), pointer_, size_, queue_->stream()),
                          "cuMemcpyDtoHAsync_v2");
    queue_->synchronize();
  }
  void write(std::span<const std::byte> in) override {
    check_size(in.size(), "write");
    queue_->make_current();
    if (size_ > 0)
      queue_->check_queue(queue_->api().cuMemcpyHtoDAsync(pointer_, in.data(), size_, queue_->stream()),
                          "cuMemcpyHtoDAsync_v2");
    queue_->synchronize();
  }

  CUdeviceptr pointer() const { return pointer_; }
  const CudaQueue* queue() const { return queue_.get(); }

 private:
  void check_size(std::size_t bytes, const char* what) const {
    if (bytes != size_)
      throw RuntimeUsageError(std::string("CUDA buffer ") + what + ": the host side has " + std::to_string(bytes) +
                              " bytes but the buffer has " + std::to_string(size_));
  }
  std::shared_ptr<CudaQueue> queue_;
  std::size_t size_;
  CUdeviceptr pointer_ = 0;
};

// `buffer` as one of `queue`'s buffers (RuntimeUsageError otherwise).
const CudaBuffer& own_buffer(const CudaQueue& queue, const Buffer& buffer, const char* what) {
  const auto* cuda = dynamic_cast<const CudaBuffer*>(&buffer);
  if (cuda == nullptr || cuda->queue() != &queue)
    throw RuntimeUsageError(std::string("CUDA ") + what + ": the buffer is not one of this device's");
  return *cuda;
}

class CudaModule final : public Module {
 public:
  CudaModule(std::shared_ptr<CudaQueue> queue, CUmodule module, std::vector<std::string> names, bool from_cache)
      : queue_(std::move(queue)), module_(module), names_(std::move(names)), from_cache_(from_cache) {}
  ~CudaModule() override {
    // Its kernels may still be running.
    queue_->make_current_quietly();
    queue_->api().cuStreamSynchronize(queue_->stream());
    queue_->api().cuModuleUnload(module_);
  }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  const std::vector<std::string>& kernel_names() const override { return names_; }
  bool from_cache() const override { return from_cache_; }
  const CudaQueue* queue() const { return queue_.get(); }
  std::vector<CUfunction>& functions() { return functions_; }
  CUmodule handle() const { return module_; }

 private:
  std::shared_ptr<CudaQueue> queue_;
  CUmodule module_;
  std::vector<std::string> names_;
  std::vector<CUfunction> functions_;
  bool from_cache_;
};

class CudaEvent final : public Event {
 public:
  CudaEvent(std::shared_ptr<CudaQueue> queue, bool timing) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    api.check(api.cuEventCreate(&event_, timing ? 0u : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const CUresult recorded = api.cuEventRecord(event_, queue_->stream());
    if (recorded != CUDA_SUCCESS) {
      api.cuEventDestroy(event_);
      queue_->check_queue(recorded, "cuEventRecord");
    }
  }
  ~CudaEvent() override {
    queue_->make_current_quietly();
    queue_->api().cuEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  CUevent handle() const { return event_; }

  void wait() override {
    queue_->make_current();
    queue_->check_queue(queue_->api().cuEventSynchronize(event_), "cuEventSynchronize");
  }
  double milliseconds_since(const Event& start) override {
    const auto* begin = dynamic_cast<const CudaEvent*>(&start);
    if (begin == nullptr) return -1;
    wait();
    float ms = 0;
    queue_->check_queue(queue_->api().cuEventElapsedTime(&ms, begin->event_, event_), "cuEventElapsedTime");
    return ms;
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  CUevent event_ = nullptr;
};

// Writes the values of `args` (a launch of `kernel` on `queue`) into `out`.
void resolve_args(const CudaQueue& queue, const std::string& kernel, std::span<const KernelArg> args, ParamArray& out) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (const auto* buffer = std::get_if<const Buffer*>(&args[k])) {
      if (*buffer == nullptr)
        throw RuntimeUsageError("CUDA launch of " + kernel + ": argument " + std::to_string(k) + " is null");
      out.values()[k] = own_buffer(queue, **buffer, "launch argument").pointer();
    } else {
      out.values()[k] = static_cast<unsigned long long>(std::get<std::int64_t>(args[k]));
    }
  }
}

// A launch sequence as an instantiated CUDA graph (see CudaDevice::build_graph). Holds the
// queue, not the module: its owner keeps the module alive as long as the graph.
class CudaGraph final : public LaunchGraph {
 public:
  // Per step: its node (nullptr for an empty grid or a memset), with the launch's parameters
  // less the argument array.
  struct KernelNode {
    CUgraphNode node = nullptr;
    CUDA_KERNEL_NODE_PARAMS params;
    std::string name;
    std::size_t arity = 0;
  };
  CudaGraph(std::shared_ptr<CudaQueue> queue, CUgraph graph, CUgraphExec exec, std::vector<KernelNode> nodes,
            std::string label)
      : queue_(std::move(queue)), graph_(graph), exec_(exec), nodes_(std::move(nodes)), label_(std::move(label)) {}
  ~CudaGraph() override {
    // A graph still running is freed by the driver once it completes.
    queue_->make_current_quietly();
    queue_->api().cuGraphExecDestroy(exec_);
    queue_->api().cuGraphDestroy(graph_);
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  bool set_args(std::size_t step, std::span<const KernelArg> args, std::string& why) override {
    KernelNode& k = nodes_.at(step);
    if (k.node == nullptr) return true;  // an empty grid: no node
    internal_check(args.size() == k.arity, [&] { return "graph step " + k.name + " set with another argument count"; });
    ParamArray values(args.size());
    resolve_args(*queue_, k.name, args, values);
    CUDA_KERNEL_NODE_PARAMS p = k.params;
    p.kernelParams = values.pointers();  // the driver copies the values
    queue_->make_current();
    const CUresult result = queue_->api().cuGraphExecKernelNodeSetParams(exec_, k.node, &p);
    if (result == CUDA_SUCCESS) return true;
    why = "cuGraphExecKernelNodeSetParams_v2 failed: " + queue_->api().describe(result);
    return false;
  }
  void launch() override {
    queue_->make_current();
    const CUresult result = queue_->api().cuGraphLaunch(exec_, queue_->stream());
    if (result != CUDA_SUCCESS) queue_->check_queue(result, "cuGraphLaunch", "launching " + label_);
    queue_->pending().add(label_);
  }

 private:
  std::shared_ptr<CudaQueue> queue_;
  CUgraph graph_;  // kept: its nodes name those of exec_ whose arguments set_args updates
  CUgraphExec exec_;
  std::vector<KernelNode> nodes_;
  std::string label_;
};

// Attribute `attribute` of `device`.
int attribute(const CudaDriverApi& api, CUdevice device, int attribute) {
  int value = 0;
  api.check(api.cuDeviceGetAttribute(&value, attribute, device), "cuDeviceGetAttribute",
            "attribute " + std::to_string(attribute));
  return value;
}

ir::GpuLimits query_limits(const CudaDriverApi& api, CUdevice device) {
  ir::GpuLimits limits;
  limits.max_threads_per_block = attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  for (int slot = 0; slot < 3; ++slot) {
    limits.max_block_dims[slot] = attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + slot);
    limits.max_grid_dims[slot] = attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + slot);
  }
  // The static limit (48 KiB): kernels declare their shared memory statically, and more needs
  // the opt-in of dynamic shared memory.
  limits.max_shared_bytes = attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  limits.warp_size = attribute(api, device, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  limits.compute_units = attribute(api, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return limits;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

}  // namespace

namespace {

// Whether `arch` is sm_<major><minor> of sm_80 or later, an optional feature suffix ("sm_90a").
bool sm_80_or_later(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return false;
  std::size_t digits = 3;
  while (digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits])) != 0) ++digits;
  if (digits == 3 || digits > 6) return false;
  return std::stoi(arch.substr(3, digits - 3)) >= 80;
}

}  // namespace

std::vector<ir::NarrowFormat> cuda_mma_formats(const std::string& arch) {
  if (!sm_80_or_later(arch)) return {};
  return {ir::NarrowFormat::BF16, ir::NarrowFormat::F16, ir::NarrowFormat::TF32};
}

bool cuda_async_copy(const std::string& arch) { return sm_80_or_later(arch); }

namespace {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(std::shared_ptr<CudaQueue> queue) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    const CUdevice device = queue_->device();
    limits_ = query_limits(api, device);
    arch_ = "sm_" + std::to_string(attribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) +
            std::to_string(attribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    std::array<char, 256> name{};
    api.check(api.cuDeviceGetName(name.data(), static_cast<int>(name.size()) - 1, device), "cuDeviceGetName");
    name_ = name.data();
    // NVRTC is needed for every kernel: a driver without it is a backend that cannot run anything.
    nvrtc_version_ = nvrtc_version();
    options_ = nvrtc_options(arch_);
  }

  std::string_view api() const override { return "cuda"; }
  std::string description() const override {
    const int version = queue_->api().driver_version;
    return name_ + " (" + arch_ + "), CUDA driver " + std::to_string(version / 1000) + "." +
           std::to_string(version % 1000 / 10) + ", NVRTC " + nvrtc_version_;
  }
  const ir::GpuLimits& limits() const override { return limits_; }
  std::vector<ir::NarrowFormat> mma_formats() const override { return cuda_mma_formats(arch_); }
  bool async_copy() const override { return cuda_async_copy(arch_); }
  std::string cache_tag() const override {
    return "cuda " + arch_ + " nvrtc " + nvrtc_version_ + " driver " + std::to_string(queue_->api().driver_version) +
           " options " + joined(options_);
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    queue_->make_current();
    return std::make_unique<CudaBuffer>(queue_, bytes);
  }
  void fill_zero(Buffer& buffer) override {
    const auto& b = own(buffer, "fill_zero");
    queue_->make_current();
    queue_->check_queue(queue_->api().cuMemsetD8Async(b.pointer(), 0, std::max<std::size_t>(b.size(), 1),
                                                      queue_->stream()),
                        "cuMemsetD8Async");
  }
  void copy(Buffer& dst, const Buffer& src) override {
    const auto& to = own(dst, "copy (destination)");
    const auto& from = own(src, "copy (source)");
    if (to.size() != from.size())
      throw RuntimeUsageError("CUDA copy: the destination has " + std::to_string(to.size()) +
                              " bytes, the source " + std::to_string(from.size()));
    queue_->make_current();
    if (to.size() > 0)
      queue_->check_queue(queue_->api().cuMemcpyDtoDAsync(to.pointer(), from.pointer(), to.size(), queue_->stream()),
                          "cuMemcpyDtoDAsync_v2");
  }

  std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                               const std::filesystem::path& cache_dir) override;
  void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
              std::span<const KernelArg> args) override;
  bool has_graphs() const override { return true; }
  std::unique_ptr<LaunchGraph> build_graph(Module& module, std::span<const LaunchStep> steps,
                                           const std::string& label, std::string& why) override;
  std::pair<std::uint64_t, std::size_t> graph_key(const Buffer& buffer) const override {
    const CudaBuffer& b = own(buffer, "graph argument");
    return {b.pointer(), b.size()};
  }
  std::unique_ptr<Event> record(bool timing) override {
    queue_->make_current();
    return std::make_unique<CudaEvent>(queue_, timing);
  }
  void synchronize() override {
    queue_->make_current();
    queue_->synchronize();
  }

  CudaQueue& queue() const { return *queue_; }
  const CudaBuffer& own(const Buffer& buffer, const char* what) const { return own_buffer(*queue_, buffer, what); }
  /// `module` as one of this device's, with kernel `kernel` (RuntimeUsageError otherwise).
  CudaModule& own_kernel(Module& module, std::size_t kernel, const char* what) const {
    auto* cuda = dynamic_cast<CudaModule*>(&module);
    if (cuda == nullptr || cuda->queue() != queue_.get())
      throw RuntimeUsageError(std::string("CUDA ") + what + ": the module was not loaded on this device");
    if (kernel >= cuda->functions().size())
      throw RuntimeUsageError(std::string("CUDA ") + what + ": kernel " + std::to_string(kernel) + " of a module of " +
                              std::to_string(cuda->functions().size()));
    return *cuda;
  }


 private:
  // The module in `image` (a cubin or PTX), or the driver's complaint in `problem`.
  CUmodule load_image(const std::string& image, std::string& problem) const;
  std::shared_ptr<CudaModule> resolve(CUmodule module, const std::vector<std::string>& kernels, bool from_cache) const;

  std::shared_ptr<CudaQueue> queue_;
  ir::GpuLimits limits_;
  std::string arch_, name_, nvrtc_version_;
  std::vector<std::string> options_;
};

CUmodule CudaDevice::load_image(const std::string& image, std::string& problem) const {
  const auto& api = queue_->api();
  std::string log(8192, '\0');
  std::array<int, 2> options{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::array<void*, 2> values{log.data(), reinterpret_cast<void*>(log.size())};
  CUmodule module = nullptr;
  const CUresult result = api.cuModuleLoadDataEx(&module, image.data(), 2, options.data(), values.data());
  if (result == CUDA_SUCCESS) return module;
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  problem = "cuModuleLoadDataEx failed: " + api.describe(result) + (log.empty() ? "" : "; log: " + log);
  return nullptr;
}

std::shared_ptr<CudaModule> CudaDevice::resolve(CUmodule module, const std::vector<std::string>& kernels,
                                                bool from_cache) const {
  // Owned from here on: a missing kernel unloads the module with it.
  auto out = std::make_shared<CudaModule>(queue_, module, kernels, from_cache);
  for (const auto& name : kernels) {
    CUfunction function = nullptr;
    const CUresult result = queue_->api().cuModuleGetFunction(&function, module, name.c_str());
    if (result != CUDA_SUCCESS)
      throw CompileError("the compiled CUDA module has no kernel " + name + " (" + queue_->api().describe(result) +
                         "); kernels must be declared extern \"C\" __global__");
    out->functions().push_back(function);
  }
  return out;
}

std::shared_ptr<Module> CudaDevice::load(const std::string& source, const std::vector<std::string>& kernels,
                                         const std::filesystem::path& cache_dir) {
  queue_->make_current();
  const std::string name = kernels.empty() ? "module" : kernels.front();
  // NVRTC gives a cubin for the real architecture sm_XY (PTX only without nvrtcGetCUBIN); the
  // driver's loader takes either, so one entry name serves both.
  const ModuleCacheEntry entry = module_cache_entry(cache_dir, name, "cubin", source + "\n" + cache_tag());
  std::string problem;
  if (auto cached = read_cached_module(entry)) {
    if (CUmodule module = load_image(*cached, problem)) return resolve(module, kernels, true);
    discard_cached_module(entry, "the CUDA driver refused it: " + problem);
  }
  const NvrtcOutput out = nvrtc_compile_program(source, options_, name + ".cu");
  const std::string& image = out.cubin.empty() ? out.ptx : out.cubin;
  CUmodule module = load_image(image, problem);
  if (module == nullptr)
    throw CompileError("the CUDA driver cannot load what NVRTC " + nvrtc_version_ + " compiled for " + arch_ +
                       " (" + name + "): " + problem + "; is the driver older than NVRTC?");
  auto loaded = resolve(module, kernels, false);
  store_cached_module(entry, image);
  return loaded;
}

void CudaDevice::launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
                        std::span<const KernelArg> args) {
  CudaModule& cuda = own_kernel(module, kernel, "launch");
  const std::string& name = cuda.kernel_names()[kernel];
  if (!launchable(geometry, limits_, name)) return;
  ParamArray params(args.size());
  resolve_args(*queue_, name, args, params);
  queue_->make_current();
  const auto& g = geometry.grid;
  const auto& b = geometry.block;
  const CUresult result = queue_->api().cuLaunchKernel(
      cuda.functions()[kernel], static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2]),
      static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2]), 0, queue_->stream(),
      params.pointers(), nullptr);
  if (result != CUDA_SUCCESS) queue_->check_queue(result, "cuLaunchKernel", "launching " + name);
  queue_->pending().add(name);
}

// Built explicitly rather than captured from a stream: the sequence is known before any launch,
// the nodes are at hand for updating their arguments, and nothing else enqueued on the stream
// meanwhile (or a capture-unsafe call on another thread) can end up in the graph or invalidate it.
// The nodes form one chain, each depending on the one before: the order the stream would give.
std::unique_ptr<LaunchGraph> CudaDevice::build_graph(Module& module, std::span<const LaunchStep> steps,
                                                     const std::string& label, std::string& why) {
  const auto& api = queue_->api();
  if (!api.missing_graph_entry_points.empty()) {
    why = "the CUDA driver " + api.library + " lacks " + api.missing_graph_entry_points;
    return nullptr;
  }
  // Every step checked as launch checks it before the driver sees any.
  std::vector<CudaGraph::KernelNode> nodes(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    if (step.kernel == LaunchStep::kZeroFill) {
      if (step.args.size() != 1 || !std::holds_alternative<const Buffer*>(step.args[0]))
        throw InternalError("a zero-fill step of " + label + " takes one buffer");
      continue;
    }
    CudaModule& cuda = own_kernel(module, step.kernel, "graph");
    if (!launchable(step.geometry, limits_, cuda.kernel_names()[step.kernel])) continue;
    nodes[k].name = cuda.kernel_names()[step.kernel];
    nodes[k].arity = step.args.size();
    auto& p = nodes[k].params;
    p.func = cuda.functions()[step.kernel];
    const auto& g = step.geometry.grid;
    const auto& b = step.geometry.block;
    p.gridDimX = static_cast<unsigned>(g[0]), p.gridDimY = static_cast<unsigned>(g[1]);
    p.gridDimZ = static_cast<unsigned>(g[2]);
    p.blockDimX = static_cast<unsigned>(b[0]), p.blockDimY = static_cast<unsigned>(b[1]);
    p.blockDimZ = static_cast<unsigned>(b[2]);
  }
  queue_->make_current();
  auto failed = [&](const char* call, CUresult result) {
    why = std::string(call) + " failed: " + api.describe(result);
    return nullptr;
  };
  CUgraph graph = nullptr;
  if (const CUresult r = api.cuGraphCreate(&graph, 0); r != CUDA_SUCCESS) return failed("cuGraphCreate", r);
  // Owned by the CudaGraph once instantiated: its nodes are the handles for updating the instance.
  std::unique_ptr<CUgraph_st, CUresult (*)(CUgraph)> owned(graph, api.cuGraphDestroy);
  CUgraphNode previous = nullptr;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    CUgraphNode node = nullptr;
    const std::size_t dependencies = previous == nullptr ? 0 : 1;
    if (step.kernel == LaunchStep::kZeroFill) {
      const CudaBuffer& b = own(*std::get<const Buffer*>(step.args[0]), "graph zero fill");
      CUDA_MEMSET_NODE_PARAMS memset;
      memset.dst = b.pointer();
      memset.width = std::max<std::size_t>(b.size(), 1);  // as fill_zero
      if (const CUresult r = api.cuGraphAddMemsetNode(&node, graph, &previous, dependencies, &memset, queue_->context());
          r != CUDA_SUCCESS)
        return failed("cuGraphAddMemsetNode", r);
    } else {
      if (nodes[k].params.func == nullptr) continue;  // an empty grid launches nothing
      ParamArray params(step.args.size());
      resolve_args(*queue_, nodes[k].name, step.args, params);
      CUDA_KERNEL_NODE_PARAMS p = nodes[k].params;
      p.kernelParams = params.pointers();  // the driver copies the values
      if (const CUresult r = api.cuGraphAddKernelNode(&node, graph, &previous, dependencies, &p); r != CUDA_SUCCESS)
        return failed("cuGraphAddKernelNode_v2", r);
      nodes[k].node = node;
    }
    previous = node;
  }
  CUgraphExec exec = nullptr;
  if (const CUresult r = api.cuGraphInstantiateWithFlags(&exec, graph, 0); r != CUDA_SUCCESS)
    return failed("cuGraphInstantiateWithFlags", r);
  return std::make_unique<CudaGraph>(queue_, owned.release(), exec, std::move(nodes), label);
}


// Makes `waiting`'s stream wait for everything enqueued on `done`'s stream so far (the event
// may go at once: the driver releases it after the wait).
void stream_waits_for(CudaDevice& waiting, CudaDevice& done) {
  const std::unique_ptr<Event> event = done.record(false);
  CudaQueue& queue = waiting.queue();
  queue.make_current();
  queue.check_queue(queue.api().cuStreamWaitEvent(queue.stream(), static_cast<const CudaEvent&>(*event).handle(), 0),
                    "cuStreamWaitEvent");
}

/// Page-locked host memory, portable to every context: the copy engines read and write it
/// directly, where pageable memory is copied once more by the driver.
class PinnedHost {
 public:
  PinnedHost(const CudaDriverApi& api, std::size_t bytes) : api_(api) {
    api.check(api.cuMemHostAlloc(&data_, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc",
              "staging " + std::to_string(bytes) + " bytes between two GPUs");
  }
  ~PinnedHost() { api_.cuMemFreeHost(data_); }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  void* data() const { return data_; }

 private:
  const CudaDriverApi& api_;
  void* data_ = nullptr;
};

// GPUs without a peer path: device to pinned host memory on the source's stream (after its work),
// then to the destination on its stream; synchronous, so that the staging buffer can go after.
void staged_copy(CudaQueue& dst_queue, const CudaBuffer& target, CudaQueue& src_queue, const CudaBuffer& source) {
  src_queue.make_current();
  const PinnedHost host(src_queue.api(), source.size());
  src_queue.check_queue(src_queue.api().cuMemcpyDtoHAsync(host.data(), source.pointer(), source.size(), src_queue.stream()),
                        "cuMemcpyDtoHAsync_v2", "staging a copy between two GPUs");
  src_queue.synchronize();
  dst_queue.make_current();
  dst_queue.check_queue(dst_queue.api().cuMemcpyHtoDAsync(target.pointer(), host.data(), target.size(), dst_queue.stream()),
                        "cuMemcpyHtoDAsync_v2", "staging a copy between two GPUs");
  dst_queue.synchronize();
  src_queue.make_current();  // the staging buffer is freed in the context that made it
}

}  // namespace

std::optional<CudaDeviceHandles> cuda_handles(const Device& device) {
  const auto* cuda = dynamic_cast<const CudaDevice*>(&device);
  if (cuda == nullptr) return std::nullopt;
  const CudaQueue& queue = cuda->queue();
  return CudaDeviceHandles{&queue.api(), queue.device(), queue.context(), queue.stream()};
}

cuda::CUdeviceptr cuda_pointer(const Device& device, const Buffer& buffer) {
  const auto* cuda = dynamic_cast<const CudaDevice*>(&device);
  if (cuda == nullptr) throw RuntimeUsageError("CUDA buffer pointer asked of a " + std::string(device.api()) + " device");
  return cuda->own(buffer, "collective argument").pointer();
}

bool cuda_peer_copy(Device& dst_device, Buffer& dst, Device& src_device, const Buffer& src) {
  auto* to = dynamic_cast<CudaDevice*>(&dst_device);
  auto* from = dynamic_cast<CudaDevice*>(&src_device);
  if (to == nullptr || from == nullptr || &to->queue().api() != &from->queue().api()) return false;
  const CudaBuffer& target = to->own(dst, "peer copy (destination)");
  const CudaBuffer& source = from->own(src, "peer copy (source)");
  if (target.size() != source.size())
    throw RuntimeUsageError("CUDA peer copy: the destination has " + std::to_string(target.size()) +
                            " bytes, the source " + std::to_string(source.size()));
  CudaQueue& dst_queue = to->queue();
  CudaQueue& src_queue = from->queue();
  if (target.size() == 0) return true;
  if (!dst_queue.reach(src_queue)) {
    staged_copy(dst_queue, target, src_queue, source);
    return true;
  }
  // Read after write on the source, then write after read: the source's later work (which may
  // overwrite it) waits for the copy.
  stream_waits_for(*to, *from);
  dst_queue.make_current();
  dst_queue.check_queue(dst_queue.api().cuMemcpyPeerAsync(target.pointer(), dst_queue.context(), source.pointer(),
                                                          src_queue.context(), target.size(), dst_queue.stream()),
                        "cuMemcpyPeerAsync");
  stream_waits_for(*from, *to);
  return true;
}

std::shared_ptr<Device> open_cuda_on(const CudaDriverApi& api, int ordinal) {
  return std::make_shared<CudaDevice>(std::make_shared<CudaQueue>(api, ordinal));
}

std::shared_ptr<Device> open_cuda(int ordinal) { return open_cuda_on(CudaDriverApi::get(), ordinal); }

}  // namespace cannl::backends::gpu
