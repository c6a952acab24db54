// The HIP device (see device.h): the HIP runtime on one device, one non-blocking stream, kernels
// compiled by hiprtc to a code object for the device's architecture (its gfx name) and loaded
// with hipModuleLoadData. What it shares with the CUDA device is in driver_device.h; here are
// the runtime's calls under the names those templates use, how a device is opened, and the
// copies between two devices.
#include "backends/gpu/hip_device.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <vector>

#include "backends/gpu/driver_device.h"
#include "backends/gpu/hiprtc_api.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

using namespace hip;

// The device and the stream of one Device, shared by the device and everything it made
// (buffers, modules, events); the stream is destroyed when the last of them goes.
class HipQueue final : public driver::QueueBase<HipRuntimeApi, hipError_t, hipSuccess> {
 public:
  static constexpr const char* kApi = "HIP";
  static constexpr const char* kRuntime = "HIP runtime";
  using Pointer = void*;
  using ModuleHandle = hipModule_t;
  using Function = hipFunction_t;
  using EventHandle = hipEvent_t;
  using Graph = hipGraph_t;
  using GraphNode = hipGraphNode_t;
  using GraphExec = hipGraphExec_t;
  using KernelNode = hipKernelNodeParams;

  HipQueue(const HipRuntimeApi& api, int ordinal) : QueueBase(api), ordinal_(ordinal) {
    int count = 0;
    api.check(api.hipGetDeviceCount(&count), "hipGetDeviceCount");
    if (ordinal < 0 || ordinal >= count)
      throw BackendUnavailable("no HIP device " + std::to_string(ordinal) + ": the runtime (" + api.library +
                               ") sees " + std::to_string(count) + " device(s)");
    const driver::Current current(*this);
    api.check(api.hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags");
  }
  ~HipQueue() {
    const driver::Current current(*this, driver::kQuietly);
    api_.hipStreamDestroy(stream_);
  }
  HipQueue(const HipQueue&) = delete;
  HipQueue& operator=(const HipQueue&) = delete;

  int ordinal() const { return ordinal_; }
  hipStream_t stream() const { return stream_; }

  /// Lets this device read `peer`'s memory directly (once per peer). False when the hardware
  /// cannot (no xGMI or PCIe peer path between the two GPUs).
  bool reach(const HipQueue& peer) {
    if (peer.ordinal_ == ordinal_ || reachable_.contains(peer.ordinal_)) return true;
    int can = 0;
    api_.check(api_.hipDeviceCanAccessPeer(&can, ordinal_, peer.ordinal_), "hipDeviceCanAccessPeer");
    if (can == 0) return false;
    const driver::Current current(*this);
    const hipError_t enabled = api_.hipDeviceEnablePeerAccess(peer.ordinal_, 0);
    if (enabled != hipErrorPeerAccessAlreadyEnabled) api_.check(enabled, "hipDeviceEnablePeerAccess");
    reachable_.insert(peer.ordinal_);
    return true;
  }

  // For driver::Current: the thread's device before, which restore_quietly sets again. The
  // device is set even when hipGetDevice names it already: on a thread that set none, the
  // runtime names its default, 0, and cannl does not rely on defaults.
  using Caller = int;
  int make_current() const {
    int caller = -1;
    api_.check(api_.hipGetDevice(&caller), "hipGetDevice");
    api_.check(api_.hipSetDevice(ordinal_), "hipSetDevice");
    return caller;
  }
  int make_current_quietly() const {
    int caller = -1;
    if (api_.hipGetDevice(&caller) != hipSuccess) caller = -1;
    api_.hipSetDevice(ordinal_);
    return caller;
  }
  void restore_quietly(int caller) const {
    if (caller >= 0 && caller != ordinal_) api_.hipSetDevice(caller);
  }
  void synchronize() {
    check_queue(api_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
    pending_.clear();
  }
  void drain_quietly() const { api_.hipStreamSynchronize(stream_); }

  // ---- memory ----
  Pointer allocate(std::size_t bytes) const {
    void* p = nullptr;
    api_.check(api_.hipMalloc(&p, std::max<std::size_t>(bytes, 1)), "hipMalloc",
               "allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void free_quietly(Pointer p) const { api_.hipFree(p); }
  void zero_async(Pointer p, std::size_t bytes) const {
    check_queue(api_.hipMemsetD8Async(p, 0, bytes, stream_), "hipMemsetD8Async");
  }
  void to_host_async(void* host, Pointer p, std::size_t bytes) const {
    check_queue(api_.hipMemcpyDtoHAsync(host, p, bytes, stream_), "hipMemcpyDtoHAsync");
  }
  void from_host_async(Pointer p, const void* host, std::size_t bytes) const {
    // hipMemcpyHtoDAsync takes a non-const source; it only reads it.
    check_queue(api_.hipMemcpyHtoDAsync(p, const_cast<void*>(host), bytes, stream_), "hipMemcpyHtoDAsync");
  }
  void device_copy_async(Pointer dst, Pointer src, std::size_t bytes) const {
    check_queue(api_.hipMemcpyDtoDAsync(dst, src, bytes, stream_), "hipMemcpyDtoDAsync");
  }

  // ---- events ----
  EventHandle record_event(bool timing) const {
    hipEvent_t event = nullptr;
    api_.check(api_.hipEventCreateWithFlags(&event, timing ? 0u : hipEventDisableTiming), "hipEventCreateWithFlags");
    const hipError_t recorded = api_.hipEventRecord(event, stream_);
    if (recorded != hipSuccess) {
      api_.hipEventDestroy(event);
      check_queue(recorded, "hipEventRecord");
    }
    return event;
  }
  void destroy_event_quietly(EventHandle event) const { api_.hipEventDestroy(event); }
  void wait_event(EventHandle event) const { check_queue(api_.hipEventSynchronize(event), "hipEventSynchronize"); }
  double elapsed_ms(EventHandle begin, EventHandle end) const {
    float ms = 0;
    check_queue(api_.hipEventElapsedTime(&ms, begin, end), "hipEventElapsedTime");
    return ms;
  }
  /// Later work on the stream waits for `event`.
  void wait_for_event(EventHandle event) const {
    check_queue(api_.hipStreamWaitEvent(stream_, event, 0), "hipStreamWaitEvent");
  }

  // ---- modules and launches ----
  /// The module in `image` (a code object), or null with the runtime's complaint in `problem`.
  ModuleHandle load_image(const std::string& image, std::string& problem) const {
    hipModule_t module = nullptr;
    const hipError_t result = api_.hipModuleLoadData(&module, image.data());
    if (result == hipSuccess) return module;
    // Out of memory, or a device a kernel fault left unusable: recompiling would not help.
    if (!refuses_the_image(result)) api_.check(result, "hipModuleLoadData");
    problem = "hipModuleLoadData failed: " + api_.describe(result);
    return nullptr;
  }
  Function function(ModuleHandle module, const std::string& name, std::string& problem) const {
    hipFunction_t function = nullptr;
    const hipError_t result = api_.hipModuleGetFunction(&function, module, name.c_str());
    if (result != hipSuccess) problem = api_.describe(result);
    return result == hipSuccess ? function : nullptr;
  }
  /// The kernel's thread limit (its launch bounds). Nothing of the parameter count: the HIP
  /// runtime has no query for a hipFunction_t (CUDA's cuFuncGetParamInfo has no HIP counterpart
  /// in ROCm 5 and 6; the newest ROCm's hipKernelGetParamInfo takes a hipKernel_t of its library
  /// API), so the argument count goes unchecked. The device is current.
  driver::KernelFacts facts(Function function, const std::string& name) const {
    driver::KernelFacts out;
    int threads = 0;
    api_.check(api_.hipFuncGetAttribute(&threads, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
               "hipFuncGetAttribute", "the thread limit of kernel " + name);
    out.max_threads = threads;
    return out;
  }
  void unload_quietly(ModuleHandle module) const { api_.hipModuleUnload(module); }
  void launch(Function function, const ir::KernelGeometry& geometry, void** params, const std::string& name) const {
    const KernelNode p = kernel_node(function, geometry);
    const hipError_t result = api_.hipModuleLaunchKernel(function, p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x,
                                                         p.blockDim.y, p.blockDim.z, 0, stream_, params, nullptr);
    if (result != hipSuccess) check_queue(result, "hipModuleLaunchKernel", "launching " + name);
  }

  // ---- graphs (see DriverDevice::build_graph) ----
  std::string graphs_missing() const {
    if (api_.missing_graph_entry_points.empty()) return "";
    return "the HIP runtime " + api_.library + " lacks " + api_.missing_graph_entry_points;
  }
  static KernelNode kernel_node(Function function, const ir::KernelGeometry& geometry) {
    KernelNode p{};
    p.func = function;
    const auto& g = geometry.grid;
    const auto& b = geometry.block;
    p.gridDim = {static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2])};
    p.blockDim = {static_cast<unsigned>(b[0]), static_cast<unsigned>(b[1]), static_cast<unsigned>(b[2])};
    return p;
  }
  bool create_graph(Graph& graph, std::string& why) const {
    return succeeded(api_.hipGraphCreate(&graph, 0), "hipGraphCreate", why);
  }
  bool add_memset_node(GraphNode& node, Graph graph, GraphNode previous, Pointer dst, std::size_t bytes,
                       std::string& why) const {
    hipMemsetParams memset{};
    memset.dst = dst;
    memset.width = bytes;
    return succeeded(api_.hipGraphAddMemsetNode(&node, graph, &previous, previous == nullptr ? 0 : 1, &memset),
                     "hipGraphAddMemsetNode", why);
  }
  bool add_kernel_node(GraphNode& node, Graph graph, GraphNode previous, KernelNode p, void** args,
                       std::string& why) const {
    p.kernelParams = args;  // the runtime copies the values
    return succeeded(api_.hipGraphAddKernelNode(&node, graph, &previous, previous == nullptr ? 0 : 1, &p),
                     "hipGraphAddKernelNode", why);
  }
  bool instantiate(GraphExec& exec, Graph graph, std::string& why) const {
    return succeeded(api_.hipGraphInstantiateWithFlags(&exec, graph, 0), "hipGraphInstantiateWithFlags", why);
  }
  bool set_kernel_node(GraphExec exec, GraphNode node, KernelNode p, void** args, std::string& why) const {
    p.kernelParams = args;
    return succeeded(api_.hipGraphExecKernelNodeSetParams(exec, node, &p), "hipGraphExecKernelNodeSetParams", why);
  }
  void launch_graph(GraphExec exec, const std::string& label) const {
    const hipError_t result = api_.hipGraphLaunch(exec, stream_);
    if (result != hipSuccess) check_queue(result, "hipGraphLaunch", "launching " + label);
  }
  void destroy_graph_quietly(Graph graph) const { api_.hipGraphDestroy(graph); }
  /// HIP does not promise to keep a destroyed graph's launches running: they finish first.
  void release_graph_quietly(Graph graph, GraphExec exec) const {
    api_.hipStreamSynchronize(stream_);
    api_.hipGraphExecDestroy(exec);
    api_.hipGraphDestroy(graph);
  }

 private:
  int ordinal_;
  hipStream_t stream_ = nullptr;
  std::set<int> reachable_;
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

class HipDevice final : public driver::DriverDevice<HipQueue> {
 public:
  HipDevice(std::shared_ptr<HipQueue> queue, const HipOptions& options) : DriverDevice(std::move(queue)) {
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
  std::string cache_tag() const override {
    return "hip " + arch_ + " hiprtc " + hiprtc_version_ + " runtime " + std::to_string(queue_->api().runtime_version) +
           " options " + driver::joined(options_);
  }

 private:
  void set_printf_fifo(std::size_t bytes) const {
    const auto& api = queue_->api();
    if (api.hipDeviceSetLimit == nullptr) {
      logging::warn("hip_printf_fifo_size: the HIP runtime " + api.library +
                    " has no hipDeviceSetLimit (before ROCm 5.3); the printf buffer keeps its size");
      return;
    }
    const driver::Current current(*queue_);
    api.check(api.hipDeviceSetLimit(hipLimitPrintfFifoSize, bytes), "hipDeviceSetLimit",
              "hip_printf_fifo_size=" + std::to_string(bytes));
  }
  std::string image_extension() const override { return "hsaco"; }
  std::string compile(const std::string& source, const std::string& name) const override {
    return hiprtc_compile_program(source, options_, name + ".hip").code;
  }
  std::string unloadable(const std::string& name, const std::string& problem) const override {
    return "the HIP runtime cannot load what hiprtc " + hiprtc_version_ + " compiled for " + arch_ + " (" + name +
           "): " + problem;
  }

  std::string arch_, name_, hiprtc_version_;
  std::vector<std::string> options_;
};

}  // namespace

bool hip_peer_copy(Device& dst_device, Buffer& dst, Device& src_device, const Buffer& src) {
  const auto copy = driver::peer_copy_of<HipDevice>(dst_device, dst, src_device, src);
  if (!copy) return false;
  HipQueue& dst_queue = copy->to.queue();
  HipQueue& src_queue = copy->from.queue();
  if (!dst_queue.reach(src_queue)) return false;
  if (copy->target.size() == 0) return true;
  // As on CUDA: after the source's work, and before the source's later work.
  driver::stream_waits_for(copy->to, copy->from);
  const driver::Current current(dst_queue);
  dst_queue.check_queue(dst_queue.api().hipMemcpyPeerAsync(copy->target.pointer(), dst_queue.ordinal(),
                                                           copy->source.pointer(), src_queue.ordinal(),
                                                           copy->target.size(), dst_queue.stream()),
                        "hipMemcpyPeerAsync");
  driver::stream_waits_for(copy->from, copy->to);
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
