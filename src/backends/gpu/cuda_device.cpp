// The CUDA device (see device.h): the driver API on the device's primary context, one
// non-blocking stream, kernels compiled by NVRTC to a cubin for the device's architecture. What
// it shares with the HIP device is in driver_device.h; here are the driver's calls under the
// names those templates use, how a device is opened, and the copies between two devices.
#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/driver_device.h"
#include "backends/gpu/nvrtc_api.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

using namespace cuda;

// The primary context of one device and the stream of one Device, shared by the device and
// everything it made (buffers, modules, events); released when the last of them goes.
class CudaQueue final : public driver::QueueBase<CudaDriverApi, CUresult, CUDA_SUCCESS> {
 public:
  static constexpr const char* kApi = "CUDA";
  static constexpr const char* kRuntime = "CUDA driver";
  using Pointer = CUdeviceptr;
  using ModuleHandle = CUmodule;
  using Function = CUfunction;
  using EventHandle = CUevent;
  using Graph = CUgraph;
  using GraphNode = CUgraphNode;
  using GraphExec = CUgraphExec;
  using KernelNode = CUDA_KERNEL_NODE_PARAMS;

  CudaQueue(const CudaDriverApi& api, int ordinal) : QueueBase(api) {
    int count = 0;
    api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count)
      throw BackendUnavailable("no CUDA device " + std::to_string(ordinal) + ": the driver (" + api.library +
                               ") sees " + std::to_string(count) + " device(s)");
    api.check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    api.check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    try {
      const driver::Current current(*this);
      api.check(api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    } catch (...) {
      api.cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }
  ~CudaQueue() {
    {
      const driver::Current current(*this, driver::kQuietly);
      api_.cuStreamDestroy(stream_);
    }
    api_.cuDevicePrimaryCtxRelease(device_);
  }
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

  CUdevice device() const { return device_; }
  CUcontext context() const { return context_; }
  CUstream stream() const { return stream_; }

  /// Lets this context read `peer`'s memory directly (once per peer). False when the hardware
  /// cannot (no NVLink or PCIe peer path between the two devices), or the driver cannot map one
  /// more peer (a device maps at most 8; a virtual machine may map none).
  bool reach(const CudaQueue& peer) {
    if (peer.context_ == context_ || reachable_.contains(peer.context_)) return true;
    if (unreachable_.contains(peer.context_)) return false;
    int can = 0;
    api_.check(api_.cuDeviceCanAccessPeer(&can, device_, peer.device_), "cuDeviceCanAccessPeer");
    if (can == 0) return false;
    const driver::Current current(*this);
    const CUresult enabled = api_.cuCtxEnablePeerAccess(peer.context_, 0);
    if (enabled == CUDA_ERROR_TOO_MANY_PEERS || enabled == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) {
      logging::warn("CUDA device " + std::to_string(device_) + " cannot map device " + std::to_string(peer.device_) +
                    "'s memory (cuCtxEnablePeerAccess: " + api_.describe(enabled) +
                    "): copies between them go through pinned host memory");
      unreachable_.insert(peer.context_);
      return false;
    }
    if (enabled != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) api_.check(enabled, "cuCtxEnablePeerAccess");
    reachable_.insert(peer.context_);
    return true;
  }

  // For driver::Current: the thread's context before, which restore_quietly puts back (null when
  // it had none: setting null pops the context this one replaced, leaving the thread as it was).
  using Caller = CUcontext;
  CUcontext make_current() const {
    CUcontext caller = nullptr;
    api_.check(api_.cuCtxGetCurrent(&caller), "cuCtxGetCurrent");
    if (caller != context_) api_.check(api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    return caller;
  }
  CUcontext make_current_quietly() const {
    CUcontext caller = nullptr;
    if (api_.cuCtxGetCurrent(&caller) != CUDA_SUCCESS) caller = nullptr;
    if (caller != context_) api_.cuCtxSetCurrent(context_);
    return caller;
  }
  void restore_quietly(CUcontext caller) const {
    if (caller != context_) api_.cuCtxSetCurrent(caller);
  }
  /// Waits for the stream to drain.
  void synchronize() {
    check_queue(api_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    pending_.clear();
  }
  void drain_quietly() const { api_.cuStreamSynchronize(stream_); }

  // ---- memory ----
  Pointer allocate(std::size_t bytes) const {
    Pointer p = 0;
    api_.check(api_.cuMemAlloc(&p, std::max<std::size_t>(bytes, 1)), "cuMemAlloc_v2",
               "allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void free_quietly(Pointer p) const { api_.cuMemFree(p); }
  void zero_async(Pointer p, std::size_t bytes) const {
    check_queue(api_.cuMemsetD8Async(p, 0, bytes, stream_), "cuMemsetD8Async");
  }
  void to_host_async(void* host, Pointer p, std::size_t bytes) const {
    check_queue(api_.cuMemcpyDtoHAsync(host, p, bytes, stream_), "cuMemcpyDtoHAsync_v2");
  }
  void from_host_async(Pointer p, const void* host, std::size_t bytes) const {
    check_queue(api_.cuMemcpyHtoDAsync(p, host, bytes, stream_), "cuMemcpyHtoDAsync_v2");
  }
  void device_copy_async(Pointer dst, Pointer src, std::size_t bytes) const {
    check_queue(api_.cuMemcpyDtoDAsync(dst, src, bytes, stream_), "cuMemcpyDtoDAsync_v2");
  }

  // ---- events ----
  EventHandle record_event(bool timing) const {
    CUevent event = nullptr;
    api_.check(api_.cuEventCreate(&event, timing ? 0u : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const CUresult recorded = api_.cuEventRecord(event, stream_);
    if (recorded != CUDA_SUCCESS) {
      api_.cuEventDestroy(event);
      check_queue(recorded, "cuEventRecord");
    }
    return event;
  }
  void destroy_event_quietly(EventHandle event) const { api_.cuEventDestroy(event); }
  void wait_event(EventHandle event) const { check_queue(api_.cuEventSynchronize(event), "cuEventSynchronize"); }
  double elapsed_ms(EventHandle begin, EventHandle end) const {
    float ms = 0;
    check_queue(api_.cuEventElapsedTime(&ms, begin, end), "cuEventElapsedTime");
    return ms;
  }
  /// Later work on the stream waits for `event`.
  void wait_for_event(EventHandle event) const {
    check_queue(api_.cuStreamWaitEvent(stream_, event, 0), "cuStreamWaitEvent");
  }

  // ---- modules and launches ----
  /// The module in `image` (a cubin or PTX), or null with the driver's complaint in `problem`
  /// when the driver refuses the image itself. Any other failure (out of memory, a context a
  /// kernel fault left unusable) throws: recompiling would not help, and a good cached image
  /// must not be discarded for it.
  ModuleHandle load_image(const std::string& image, std::string& problem) const {
    std::string log(8192, '\0');
    std::array<int, 2> options{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    std::array<void*, 2> values{log.data(), reinterpret_cast<void*>(log.size())};
    CUmodule module = nullptr;
    const CUresult result = api_.cuModuleLoadDataEx(&module, image.data(), 2, options.data(), values.data());
    if (result == CUDA_SUCCESS) return module;
    log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
    if (!refuses_the_image(result)) api_.check(result, "cuModuleLoadDataEx", log.empty() ? "" : "log: " + log);
    problem = "cuModuleLoadDataEx failed: " + api_.describe(result) + (log.empty() ? "" : "; log: " + log);
    return nullptr;
  }
  Function function(ModuleHandle module, const std::string& name, std::string& problem) const {
    CUfunction function = nullptr;
    const CUresult result = api_.cuModuleGetFunction(&function, module, name.c_str());
    if (result != CUDA_SUCCESS) problem = api_.describe(result);
    return result == CUDA_SUCCESS ? function : nullptr;
  }
  /// The kernel's thread limit, and its parameter count: the first index cuFuncGetParamInfo
  /// (CUDA 12.4 and later) refuses as past the last; unknown with an older driver or any other
  /// answer. The context is current.
  driver::KernelFacts facts(Function function, const std::string& name) const {
    driver::KernelFacts out;
    int threads = 0;
    api_.check(api_.cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
               "cuFuncGetAttribute", "the thread limit of kernel " + name);
    out.max_threads = threads;
    if (api_.cuFuncGetParamInfo == nullptr) return out;
    // A kernel's parameters take at most 32764 bytes: the bound only stops a driver that never refuses.
    for (std::size_t k = 0; k <= 32764; ++k) {
      std::size_t offset = 0;
      const CUresult result = api_.cuFuncGetParamInfo(function, k, &offset, nullptr);
      if (result == CUDA_SUCCESS) continue;
      if (result == CUDA_ERROR_INVALID_VALUE) out.arity = static_cast<std::int64_t>(k);
      break;
    }
    return out;
  }
  void unload_quietly(ModuleHandle module) const { api_.cuModuleUnload(module); }
  void launch(Function function, const ir::KernelGeometry& geometry, void** params, const std::string& name) const {
    const KernelNode p = kernel_node(function, geometry);
    const CUresult result = api_.cuLaunchKernel(p.func, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                                                p.blockDimZ, 0, stream_, params, nullptr);
    if (result != CUDA_SUCCESS) check_queue(result, "cuLaunchKernel", "launching " + name);
  }

  // ---- graphs (see DriverDevice::build_graph) ----
  std::string graphs_missing() const {
    if (api_.missing_graph_entry_points.empty()) return "";
    return "the CUDA driver " + api_.library + " lacks " + api_.missing_graph_entry_points;
  }
  static KernelNode kernel_node(Function function, const ir::KernelGeometry& geometry) {
    KernelNode p{};
    p.func = function;
    const auto& g = geometry.grid;
    const auto& b = geometry.block;
    p.gridDimX = static_cast<unsigned>(g[0]), p.gridDimY = static_cast<unsigned>(g[1]);
    p.gridDimZ = static_cast<unsigned>(g[2]);
    p.blockDimX = static_cast<unsigned>(b[0]), p.blockDimY = static_cast<unsigned>(b[1]);
    p.blockDimZ = static_cast<unsigned>(b[2]);
    return p;
  }
  bool create_graph(Graph& graph, std::string& why) const {
    return succeeded(api_.cuGraphCreate(&graph, 0), "cuGraphCreate", why);
  }
  bool add_memset_node(GraphNode& node, Graph graph, GraphNode previous, Pointer dst, std::size_t bytes,
                       std::string& why) const {
    CUDA_MEMSET_NODE_PARAMS memset{};
    memset.dst = dst;
    memset.width = bytes;
    return succeeded(api_.cuGraphAddMemsetNode(&node, graph, &previous, previous == nullptr ? 0 : 1, &memset, context_),
                     "cuGraphAddMemsetNode", why);
  }
  bool add_kernel_node(GraphNode& node, Graph graph, GraphNode previous, KernelNode p, void** args,
                       std::string& why) const {
    p.kernelParams = args;  // the driver copies the values
    return succeeded(api_.cuGraphAddKernelNode(&node, graph, &previous, previous == nullptr ? 0 : 1, &p),
                     "cuGraphAddKernelNode_v2", why);
  }
  bool instantiate(GraphExec& exec, Graph graph, std::string& why) const {
    return succeeded(api_.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags", why);
  }
  bool set_kernel_node(GraphExec exec, GraphNode node, KernelNode p, void** args, std::string& why) const {
    p.kernelParams = args;
    return succeeded(api_.cuGraphExecKernelNodeSetParams(exec, node, &p), "cuGraphExecKernelNodeSetParams_v2", why);
  }
  void launch_graph(GraphExec exec, const std::string& label) const {
    const CUresult result = api_.cuGraphLaunch(exec, stream_);
    if (result != CUDA_SUCCESS) check_queue(result, "cuGraphLaunch", "launching " + label);
  }
  void destroy_graph_quietly(Graph graph) const { api_.cuGraphDestroy(graph); }
  /// A graph still running is freed by the driver once it completes.
  void release_graph_quietly(Graph graph, GraphExec exec) const {
    api_.cuGraphExecDestroy(exec);
    api_.cuGraphDestroy(graph);
  }

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::set<CUcontext> reachable_;    // peers whose memory this context maps
  std::set<CUcontext> unreachable_;  // peers it could not map (reach() warned once)
};

using CudaBuffer = driver::DeviceBuffer<CudaQueue>;

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

// A driver loads what an NVRTC of its own CUDA major version or an older one built, never a newer
// one's (CUDA 13's NVRTC needs a driver of CUDA 13, 580 or later): every kernel would fail to load.
void require_driver_for_nvrtc(int driver_version, const std::string& nvrtc) {
  const int driver_major = driver_version / 1000;
  if (std::stoi(nvrtc) <= driver_major) return;
  throw BackendUnavailable("the CUDA driver supports CUDA " + std::to_string(driver_major) + "." +
                           std::to_string(driver_version % 1000 / 10) + ", older than NVRTC " + nvrtc +
                           ", whose kernels it cannot load: update the driver, or make an NVRTC of CUDA " +
                           std::to_string(driver_major) + " the one the loader finds (libnvrtc.so." +
                           std::to_string(driver_major) + ")");
}

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

class CudaDevice final : public driver::DriverDevice<CudaQueue> {
 public:
  explicit CudaDevice(std::shared_ptr<CudaQueue> queue) : DriverDevice(std::move(queue)) {
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
    require_driver_for_nvrtc(api.driver_version, nvrtc_version_);
    options_ = nvrtc_options(arch_);
  }

  std::string_view api() const override { return "cuda"; }
  std::string description() const override {
    const int version = queue_->api().driver_version;
    return name_ + " (" + arch_ + "), CUDA driver " + std::to_string(version / 1000) + "." +
           std::to_string(version % 1000 / 10) + ", NVRTC " + nvrtc_version_;
  }
  std::vector<ir::NarrowFormat> mma_formats() const override { return cuda_mma_formats(arch_); }
  bool async_copy() const override { return cuda_async_copy(arch_); }
  std::string cache_tag() const override {
    return "cuda " + arch_ + " nvrtc " + nvrtc_version_ + " driver " + std::to_string(queue_->api().driver_version) +
           " options " + driver::joined(options_);
  }

 private:
  // NVRTC gives a cubin for the real architecture sm_XY (PTX only without nvrtcGetCUBIN); the
  // driver's loader takes either, so one cache entry name serves both.
  std::string image_extension() const override { return "cubin"; }
  std::string compile(const std::string& source, const std::string& name) const override {
    NvrtcOutput out = nvrtc_compile_program(source, options_, name + ".cu");
    return out.cubin.empty() ? std::move(out.ptx) : std::move(out.cubin);
  }
  std::string unloadable(const std::string& name, const std::string& problem) const override {
    return "the CUDA driver cannot load what NVRTC " + nvrtc_version_ + " compiled for " + arch_ + " (" + name +
           "): " + problem + "; is the driver older than NVRTC?";
  }

  std::string arch_, name_, nvrtc_version_;
  std::vector<std::string> options_;
};

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
  const driver::Current on_source(src_queue);  // declared first: the staging buffer is freed in its context
  const PinnedHost host(src_queue.api(), source.size());
  src_queue.check_queue(src_queue.api().cuMemcpyDtoHAsync(host.data(), source.pointer(), source.size(), src_queue.stream()),
                        "cuMemcpyDtoHAsync_v2", "staging a copy between two GPUs");
  src_queue.synchronize();
  const driver::Current on_target(dst_queue);
  dst_queue.check_queue(dst_queue.api().cuMemcpyHtoDAsync(target.pointer(), host.data(), target.size(), dst_queue.stream()),
                        "cuMemcpyHtoDAsync_v2", "staging a copy between two GPUs");
  dst_queue.synchronize();
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
  const auto copy = driver::peer_copy_of<CudaDevice>(dst_device, dst, src_device, src);
  if (!copy) return false;
  CudaQueue& dst_queue = copy->to.queue();
  CudaQueue& src_queue = copy->from.queue();
  if (copy->target.size() == 0) return true;
  if (!dst_queue.reach(src_queue)) {
    staged_copy(dst_queue, copy->target, src_queue, copy->source);
    return true;
  }
  // Read after write on the source, then write after read: the source's later work (which may
  // overwrite it) waits for the copy.
  driver::stream_waits_for(copy->to, copy->from);
  const driver::Current current(dst_queue);
  dst_queue.check_queue(dst_queue.api().cuMemcpyPeerAsync(copy->target.pointer(), dst_queue.context(),
                                                          copy->source.pointer(), src_queue.context(),
                                                          copy->target.size(), dst_queue.stream()),
                        "cuMemcpyPeerAsync");
  driver::stream_waits_for(copy->from, copy->to);
  return true;
}

std::shared_ptr<Device> open_cuda_on(const CudaDriverApi& api, int ordinal) {
  return std::make_shared<CudaDevice>(std::make_shared<CudaQueue>(api, ordinal));
}

std::shared_ptr<Device> open_cuda(int ordinal) { return open_cuda_on(CudaDriverApi::get(), ordinal); }

}  // namespace cannl::backends::gpu
