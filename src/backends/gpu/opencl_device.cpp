// The OpenCL device (see device.h): one context and one in-order command queue on one device of
// one platform, OpenCL C 1.2 programs built from source or from the module cache's binaries.
//
// Host copies finish the queue first and then copy blocking, so they are ordered after every
// kernel before them and a kernel's failure surfaces there, naming the kernels enqueued since.
// Kernel objects are shared by every launch of a module: setting their arguments and enqueueing
// happen under one lock, since clSetKernelArg on one kernel is not thread-safe.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>

#include "backends/gpu/device.h"
#include "backends/gpu/launch_checks.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/opencl_api.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

using namespace opencl;

// Build options of every program: OpenCL C 1.2 and IEEE arithmetic as the interpreter computes
// it (no -cl-fast-relaxed-math, no -cl-mad-enable: the printer writes fma where the IR has one).
constexpr const char* kBuildOptions = "-cl-std=CL1.2";

// PoCL 3.1's optimizer miscompiles a race-free kernel in every work-group method: a serial loop
// ending in a barrier, around a loop holding an `if` its iterations do not change (unswitched,
// it seems), stores wrong values (the hand-made annotations' fuzzer, 900 annotations a batch;
// `OpenClDeviceTest.ALoopInvariantIfInALoopBeforeABarrier`). Unoptimized, PoCL computes what
// every other device does, so it builds so unless opencl_pocl_optimize asks otherwise.
//
// OpenCL C 1.2 lets f32 division be 2.5 ulp off and sqrt 3 ulp; the interpreter, C, CUDA and HIP
// round both correctly. A device that can (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) is asked to; one
// that cannot is named in a warning, since its quotients and roots may differ from the other
// backends' in the last bits.
std::string build_options_for(const std::string& platform_name, const std::string& device_name,
                              bool correctly_rounded_divide_sqrt) {
  const bool pocl = platform_name == "Portable Computing Language";
  std::string options = kBuildOptions;
  if (pocl && !config::get_bool("opencl_pocl_optimize")) options += " -cl-opt-disable";
  if (correctly_rounded_divide_sqrt) {
    options += " -cl-fp32-correctly-rounded-divide-sqrt";
    return options;
  }
  // Once per device in a process: every context on it opens the device again.
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (warned.insert(platform_name + "\n" + device_name).second)
    logging::warn("OpenCL device " + device_name + " (" + platform_name +
                  ") cannot round f32 division and sqrt correctly (no CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT): "
                  "they may differ from the other backends' by up to 3 ulp");
  return options;
}

// PoCL's work-group method changes the binary it builds (choose_pocl_work_group_method): part of
// a module's cache key, so that a binary built with another method is never reused.
std::string pocl_method() {
  const char* method = std::getenv("POCL_WORK_GROUP_METHOD");
  return method == nullptr ? "" : std::string(" pocl ") + method;
}

std::string platform_string(const OpenClApi& api, cl_platform_id platform, cl_info what) {
  std::size_t size = 0;
  api.check(api.clGetPlatformInfo(platform, what, 0, nullptr, &size), "clGetPlatformInfo");
  std::string out(size, '\0');
  api.check(api.clGetPlatformInfo(platform, what, size, out.data(), nullptr), "clGetPlatformInfo");
  return out.substr(0, out.find('\0'));
}

std::string device_string(const OpenClApi& api, cl_device_id device, cl_info what) {
  std::size_t size = 0;
  api.check(api.clGetDeviceInfo(device, what, 0, nullptr, &size), "clGetDeviceInfo");
  std::string out(size, '\0');
  api.check(api.clGetDeviceInfo(device, what, size, out.data(), nullptr), "clGetDeviceInfo");
  return out.substr(0, out.find('\0'));
}

template <class T>
T device_value(const OpenClApi& api, cl_device_id device, cl_info what) {
  T value{};
  api.check(api.clGetDeviceInfo(device, what, sizeof value, &value, nullptr), "clGetDeviceInfo");
  return value;
}

// The context and queue of one Device, shared by it and everything it made; released with the last.
class OpenClQueue {
 public:
  OpenClQueue(const OpenClApi& api, cl_platform_id platform, cl_device_id device)
      : api_(api), platform_(platform), device_(device) {
    const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                                reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int error = CL_SUCCESS;
    context_ = api.clCreateContext(properties, 1, &device, nullptr, nullptr, &error);
    api.check(error, "clCreateContext");
    queue_ = api.clCreateCommandQueue(context_, device, 0, &error);
    if (error != CL_SUCCESS) {
      api.clReleaseContext(context_);
      api.check(error, "clCreateCommandQueue");
    }
  }
  ~OpenClQueue() {
    // Errors are ignored: destructors must not throw, and a failed kernel may have left them.
    api_.clFinish(queue_);
    api_.clReleaseCommandQueue(queue_);
    api_.clReleaseContext(context_);
  }
  OpenClQueue(const OpenClQueue&) = delete;
  OpenClQueue& operator=(const OpenClQueue&) = delete;

  const OpenClApi& api() const { return api_; }
  cl_platform_id platform() const { return platform_; }
  cl_device_id device() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  PendingKernels& pending() { return pending_; }
  std::mutex& launch_mutex() { return launch_mutex_; }

  /// Checks a call that may report a failure of earlier commands, naming the pending kernels.
  void check_queue(cl_int result, const char* call, const std::string& doing = "") const {
    if (result == CL_SUCCESS) return;
    const std::string pending = pending_.describe();
    api_.check(result, call, doing + (doing.empty() || pending.empty() ? "" : "; ") + pending);
  }
  void finish() {
    check_queue(api_.clFinish(queue_), "clFinish");
    pending_.clear();
  }

 private:
  const OpenClApi& api_;
  cl_platform_id platform_;
  cl_device_id device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  PendingKernels pending_;
  std::mutex launch_mutex_;
};

class OpenClBuffer final : public Buffer {
 public:
  OpenClBuffer(std::shared_ptr<OpenClQueue> queue, std::size_t bytes) : queue_(std::move(queue)), size_(bytes) {
    const auto& api = queue_->api();
    // A zero-byte buffer still gets a memory object (clCreateBuffer rejects 0 bytes).
    const std::size_t allocated = std::max<std::size_t>(bytes, 1);
    cl_int error = CL_SUCCESS;
    memory_ = api.clCreateBuffer(queue_->context(), CL_MEM_READ_WRITE, allocated, nullptr, &error);
    api.check(error, "clCreateBuffer", "allocating " + std::to_string(bytes) + " bytes");
    // Implementations allocate lazily: finishing the fill surfaces an allocation failure here,
    // as a ResourceError of allocate, rather than at a later kernel.
    try {
      const unsigned char zero = 0;
      queue_->check_queue(
          api.clEnqueueFillBuffer(queue_->queue(), memory_, &zero, 1, 0, allocated, 0, nullptr, nullptr),
          "clEnqueueFillBuffer", "zeroing a new buffer of " + std::to_string(bytes) + " bytes");
      queue_->finish();
    } catch (...) {
      api.clReleaseMemObject(memory_);
      throw;
    }
  }
  ~OpenClBuffer() override { queue_->api().clReleaseMemObject(memory_); }
  OpenClBuffer(const OpenClBuffer&) = delete;
  OpenClBuffer& operator=(const OpenClBuffer&) = delete;

  std::size_t size() const override { return size_; }
  void read(std::span<std::byte> out) const override {
    check_size(out.size(), "read");
    queue_->finish();
    if (size_ > 0)
      queue_->check_queue(queue_->api().clEnqueueReadBuffer(queue_->queue(), memory_, CL_TRUE, 0, size_, out.data(),
                                                            0, nullptr, nullptr),
                          "clEnqueueReadBuffer");
  }
  void write(std::span<const std::byte> in) override {
    check_size(in.size(), "write");
    queue_->finish();
    if (size_ > 0)
      queue_->check_queue(queue_->api().clEnqueueWriteBuffer(queue_->queue(), memory_, CL_TRUE, 0, size_, in.data(),
                                                             0, nullptr, nullptr),
                          "clEnqueueWriteBuffer");
  }

  cl_mem memory() const { return memory_; }
  const OpenClQueue* queue() const { return queue_.get(); }

 private:
  void check_size(std::size_t bytes, const char* what) const {
    if (bytes != size_)
      throw RuntimeUsageError(std::string("OpenCL buffer ") + what + ": the host side has " + std::to_string(bytes) +
                              " bytes but the buffer has " + std::to_string(size_));
  }
  std::shared_ptr<OpenClQueue> queue_;
  std::size_t size_;
  cl_mem memory_ = nullptr;
};

class OpenClModule final : public Module {
 public:
  OpenClModule(std::shared_ptr<OpenClQueue> queue, cl_program program, std::vector<std::string> names,
               bool from_cache)
      : queue_(std::move(queue)), program_(program), names_(std::move(names)), from_cache_(from_cache) {}
  ~OpenClModule() override {
    for (const Kernel& kernel : kernels_) queue_->api().clReleaseKernel(kernel.handle);
    queue_->api().clReleaseProgram(program_);
  }
  OpenClModule(const OpenClModule&) = delete;
  OpenClModule& operator=(const OpenClModule&) = delete;

  const std::vector<std::string>& kernel_names() const override { return names_; }
  bool from_cache() const override { return from_cache_; }
  const OpenClQueue* queue() const { return queue_.get(); }
  /// A kernel object and what a launch of it is checked against.
  struct Kernel {
    cl_kernel handle = nullptr;
    cl_uint arity = 0;              // CL_KERNEL_NUM_ARGS
    std::size_t thread_limit = 0;   // CL_KERNEL_WORK_GROUP_SIZE: work-items a work-group may have
  };
  const std::vector<Kernel>& kernels() const { return kernels_; }
  /// Takes `handle` (released with the module), its facts still to fill in.
  Kernel& add_kernel(cl_kernel handle) { return kernels_.emplace_back(Kernel{.handle = handle}); }

 private:
  std::shared_ptr<OpenClQueue> queue_;
  cl_program program_;
  std::vector<std::string> names_;
  std::vector<Kernel> kernels_;
  bool from_cache_;
};

class OpenClEvent final : public Event {
 public:
  explicit OpenClEvent(std::shared_ptr<OpenClQueue> queue) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    queue_->check_queue(api.clEnqueueMarkerWithWaitList(queue_->queue(), 0, nullptr, &event_),
                        "clEnqueueMarkerWithWaitList");
    // Submitted now, so that waiting on the marker alone makes progress on every implementation.
    // A constructor that throws runs no destructor: the marker is released here if the flush fails.
    try {
      queue_->check_queue(api.clFlush(queue_->queue()), "clFlush");
    } catch (...) {
      api.clReleaseEvent(event_);
      throw;
    }
  }
  ~OpenClEvent() override { queue_->api().clReleaseEvent(event_); }
  OpenClEvent(const OpenClEvent&) = delete;
  OpenClEvent& operator=(const OpenClEvent&) = delete;

  void wait() override { queue_->check_queue(queue_->api().clWaitForEvents(1, &event_), "clWaitForEvents"); }

 private:
  std::shared_ptr<OpenClQueue> queue_;
  cl_event event_ = nullptr;
};

ir::GpuLimits query_limits(const OpenClApi& api, cl_device_id device) {
  ir::GpuLimits limits;
  limits.max_threads_per_block =
      static_cast<std::int64_t>(device_value<std::size_t>(api, device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  const auto dimensions = device_value<cl_uint>(api, device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  std::vector<std::size_t> sizes(std::max<cl_uint>(dimensions, 3), 1);
  api.check(api.clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, dimensions * sizeof(std::size_t),
                                sizes.data(), nullptr),
            "clGetDeviceInfo");
  for (int slot = 0; slot < 3; ++slot) {
    limits.max_block_dims[slot] = static_cast<std::int64_t>(sizes[slot]);
    // OpenCL bounds only the global size (grid x block) by size_t; 2^31 - 1 blocks per slot
    // keeps every index the printer computes inside 64 bits.
    limits.max_grid_dims[slot] = std::numeric_limits<std::int32_t>::max();
  }
  limits.max_shared_bytes = static_cast<std::int64_t>(device_value<cl_ulong>(api, device, CL_DEVICE_LOCAL_MEM_SIZE));
  limits.warp_size = 1;
  limits.compute_units = static_cast<std::int64_t>(device_value<cl_uint>(api, device, CL_DEVICE_MAX_COMPUTE_UNITS));
  return limits;
}

class OpenClDevice final : public Device {
 public:
  explicit OpenClDevice(std::shared_ptr<OpenClQueue> queue) : queue_(std::move(queue)) {
    const auto& api = queue_->api();
    const cl_device_id device = queue_->device();
    limits_ = query_limits(api, device);
    max_allocation_ = device_value<cl_ulong>(api, device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    device_name_ = device_string(api, device, CL_DEVICE_NAME);
    device_version_ = device_string(api, device, CL_DEVICE_VERSION);
    driver_version_ = device_string(api, device, CL_DRIVER_VERSION);
    platform_name_ = platform_string(api, queue_->platform(), CL_PLATFORM_NAME);
    platform_version_ = platform_string(api, queue_->platform(), CL_PLATFORM_VERSION);
    build_options_ = build_options_for(
        platform_name_, device_name_,
        (device_value<cl_bitfield>(api, device, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0);
    fp64_ = (" " + device_string(api, device, CL_DEVICE_EXTENSIONS) + " ").find(" cl_khr_fp64 ") != std::string::npos;
  }

  std::string_view api() const override { return "opencl"; }
  std::string description() const override {
    return device_name_ + " (" + platform_name_ + ", " + platform_version_ + ", " +
           (fp64_ ? "fp64" : "no fp64: kernels using double do not build") + ")";
  }
  const ir::GpuLimits& limits() const override { return limits_; }
  std::string cache_tag() const override {
    return "opencl platform " + platform_name_ + " " + platform_version_ + " device " + device_name_ + " " +
           device_version_ + " driver " + driver_version_ + " options " + build_options_ + pocl_method();
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    if (bytes > max_allocation_)
      throw ResourceError("cannot allocate " + std::to_string(bytes) + " bytes on " + device_name_ +
                          ": its largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE) is " +
                          std::to_string(max_allocation_) + " bytes");
    return std::make_unique<OpenClBuffer>(queue_, bytes);
  }
  void fill_zero(Buffer& buffer) override {
    const auto& b = own(buffer, "fill_zero");
    const unsigned char zero = 0;
    queue_->check_queue(queue_->api().clEnqueueFillBuffer(queue_->queue(), b.memory(), &zero, 1, 0,
                                                          std::max<std::size_t>(b.size(), 1), 0, nullptr, nullptr),
                        "clEnqueueFillBuffer");
  }
  void copy(Buffer& dst, const Buffer& src) override {
    const auto& to = own(dst, "copy (destination)");
    const auto& from = own(src, "copy (source)");
    if (to.size() != from.size())
      throw RuntimeUsageError("OpenCL copy: the destination has " + std::to_string(to.size()) +
                              " bytes, the source " + std::to_string(from.size()));
    if (to.size() > 0)
      queue_->check_queue(queue_->api().clEnqueueCopyBuffer(queue_->queue(), from.memory(), to.memory(), 0, 0,
                                                            to.size(), 0, nullptr, nullptr),
                          "clEnqueueCopyBuffer");
  }

  std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                               const std::filesystem::path& cache_dir) override;
  void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
              std::span<const KernelArg> args) override;
  // OpenCL events time only on a profiling queue, which this device does not open.
  std::unique_ptr<Event> record(bool) override { return std::make_unique<OpenClEvent>(queue_); }
  void synchronize() override { queue_->finish(); }

 private:
  const OpenClBuffer& own(const Buffer& buffer, const char* what) const {
    const auto* cl = dynamic_cast<const OpenClBuffer*>(&buffer);
    if (cl == nullptr || cl->queue() != queue_.get())
      throw RuntimeUsageError(std::string("OpenCL ") + what + ": the buffer is not one of this device's");
    return *cl;
  }
  cl_program build_from_source(const std::string& source, const std::string& name) const;
  cl_program build_from_binary(const std::string& binary, std::string& problem) const;
  std::string program_binary(cl_program program) const;
  std::string build_log(cl_program program) const;
  std::shared_ptr<OpenClModule> resolve(cl_program program, const std::vector<std::string>& kernels,
                                        bool from_cache) const;

  std::shared_ptr<OpenClQueue> queue_;
  ir::GpuLimits limits_;
  cl_ulong max_allocation_ = 0;
  std::string device_name_, device_version_, driver_version_, platform_name_, platform_version_;
  std::string build_options_;  // of every program this device builds (build_options_for)
  bool fp64_ = false;
};

std::string OpenClDevice::build_log(cl_program program) const {
  const auto& api = queue_->api();
  std::size_t size = 0;
  if (api.clGetProgramBuildInfo(program, queue_->device(), CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return "(no build log)";
  std::string log(size, '\0');
  if (api.clGetProgramBuildInfo(program, queue_->device(), CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS)
    return "(no build log)";
  return log.substr(0, log.find('\0'));
}

cl_program OpenClDevice::build_from_source(const std::string& source, const std::string& name) const {
  const auto& api = queue_->api();
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int error = CL_SUCCESS;
  cl_program program = api.clCreateProgramWithSource(queue_->context(), 1, &text, &length, &error);
  api.check(error, "clCreateProgramWithSource");
  const cl_device_id device = queue_->device();
  const cl_int built = api.clBuildProgram(program, 1, &device, build_options_.c_str(), nullptr, nullptr);
  if (built == CL_SUCCESS) return program;
  const std::string log = build_log(program);
  api.clReleaseProgram(program);
  if (built == CL_BUILD_PROGRAM_FAILURE)
    throw CompileError("the OpenCL compiler of " + platform_name_ + " (" + device_name_ +
                       ") rejected the generated OpenCL C of " + name + "\n  options: " + build_options_ +
                       "\n  build log:\n" + log +
                       "\n  If the generated code itself is invalid, please report it with the source.");
  api.check(built, "clBuildProgram", "building " + name + "; log: " + log);
  return nullptr;
}

cl_program OpenClDevice::build_from_binary(const std::string& binary, std::string& problem) const {
  const auto& api = queue_->api();
  const cl_device_id device = queue_->device();
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const std::size_t length = binary.size();
  cl_int status = CL_SUCCESS, error = CL_SUCCESS;
  cl_program program = api.clCreateProgramWithBinary(queue_->context(), 1, &device, &length, &bytes, &status, &error);
  if (error != CL_SUCCESS || status != CL_SUCCESS) {
    problem = "clCreateProgramWithBinary failed: " + opencl_error_name(error != CL_SUCCESS ? error : status);
    if (program != nullptr) api.clReleaseProgram(program);
    return nullptr;
  }
  const cl_int built = api.clBuildProgram(program, 1, &device, build_options_.c_str(), nullptr, nullptr);
  if (built == CL_SUCCESS) return program;
  problem = "clBuildProgram of the binary failed: " + opencl_error_name(built) + "; " + build_log(program);
  api.clReleaseProgram(program);
  return nullptr;
}

std::string OpenClDevice::program_binary(cl_program program) const {
  const auto& api = queue_->api();
  std::size_t size = 0;  // one device, so one binary
  api.check(api.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr), "clGetProgramInfo");
  std::string binary(size, '\0');
  if (size == 0) return binary;
  unsigned char* address = reinterpret_cast<unsigned char*>(binary.data());
  api.check(api.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof address, &address, nullptr),
            "clGetProgramInfo");
  return binary;
}

std::shared_ptr<OpenClModule> OpenClDevice::resolve(cl_program program, const std::vector<std::string>& kernels,
                                                    bool from_cache) const {
  // Owned from here on: a missing kernel releases the program with the module.
  auto module = std::make_shared<OpenClModule>(queue_, program, kernels, from_cache);
  for (const auto& name : kernels) {
    cl_int error = CL_SUCCESS;
    cl_kernel kernel = queue_->api().clCreateKernel(program, name.c_str(), &error);
    if (error != CL_SUCCESS)
      throw CompileError("the OpenCL program has no kernel " + name + " (clCreateKernel: " +
                         opencl_error_name(error) + ")");
    OpenClModule::Kernel& added = module->add_kernel(kernel);  // a failed query releases it with the module
    const auto& api = queue_->api();
    api.check(api.clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof added.arity, &added.arity, nullptr),
              "clGetKernelInfo", "the parameter count of " + name);
    // A kernel's registers or local memory may allow fewer work-items than the device's limit.
    api.check(api.clGetKernelWorkGroupInfo(kernel, queue_->device(), CL_KERNEL_WORK_GROUP_SIZE,
                                           sizeof added.thread_limit, &added.thread_limit, nullptr),
              "clGetKernelWorkGroupInfo", "the work-group limit of " + name);
  }
  return module;
}

std::shared_ptr<Module> OpenClDevice::load(const std::string& source, const std::vector<std::string>& kernels,
                                           const std::filesystem::path& cache_dir) {
  const std::string name = kernels.empty() ? "module" : kernels.front();
  const ModuleCacheEntry entry = module_cache_entry(cache_dir, name, "clbin", source + "\n" + cache_tag());
  std::string problem;
  if (auto cached = read_cached_module(entry)) {
    if (cl_program program = build_from_binary(*cached, problem)) return resolve(program, kernels, true);
    discard_cached_module(entry, "the OpenCL driver refused it: " + problem);
  }
  cl_program program = build_from_source(source, name);
  auto module = resolve(program, kernels, false);
  if (entry.file.empty()) return module;
  std::string binary;
  try {
    binary = program_binary(program);
  } catch (const RuntimeError&) {
    // A driver that gives no binary: the module runs, the next process compiles it again.
  }
  if (!binary.empty()) store_cached_module(entry, binary);
  return module;
}

void OpenClDevice::launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
                          std::span<const KernelArg> args) {
  auto* cl = dynamic_cast<OpenClModule*>(&module);
  if (cl == nullptr || cl->queue() != queue_.get())
    throw RuntimeUsageError("OpenCL launch: the module was not loaded on this device");
  if (kernel >= cl->kernels().size())
    throw RuntimeUsageError("OpenCL launch: kernel " + std::to_string(kernel) + " of a module of " +
                            std::to_string(cl->kernels().size()));
  const std::string& name = cl->kernel_names()[kernel];
  // A kernel object keeps the arguments it was last given: a launch with too few would run with
  // a previous launch's values for the rest rather than fail.
  const OpenClModule::Kernel& facts = cl->kernels()[kernel];
  check_arity("OpenCL", name, args.size(), facts.arity);
  if (!launchable(geometry, limits_, name)) return;
  check_kernel_threads(geometry, static_cast<std::int64_t>(facts.thread_limit), name);
  const auto& api = queue_->api();
  const cl_kernel handle = facts.handle;
  std::lock_guard lock(queue_->launch_mutex());
  for (std::size_t k = 0; k < args.size(); ++k) {
    const auto index = static_cast<cl_uint>(k);
    cl_int set = CL_SUCCESS;
    if (const auto* buffer = std::get_if<const Buffer*>(&args[k])) {
      if (*buffer == nullptr)
        throw RuntimeUsageError("OpenCL launch of " + name + ": argument " + std::to_string(k) + " is null");
      const cl_mem memory = own(**buffer, "launch argument").memory();
      set = api.clSetKernelArg(handle, index, sizeof memory, &memory);
    } else {
      const std::int64_t value = std::get<std::int64_t>(args[k]);  // the kernel's `long`
      set = api.clSetKernelArg(handle, index, sizeof value, &value);
    }
    api.check(set, "clSetKernelArg", "argument " + std::to_string(k) + " of " + name);
  }
  std::array<std::size_t, 3> global{}, local{};
  for (int slot = 0; slot < 3; ++slot) {
    local[slot] = static_cast<std::size_t>(geometry.block[slot]);
    global[slot] = static_cast<std::size_t>(geometry.grid[slot]) * local[slot];
  }
  queue_->check_queue(api.clEnqueueNDRangeKernel(queue_->queue(), handle, 3, nullptr, global.data(), local.data(), 0,
                                                 nullptr, nullptr),
                      "clEnqueueNDRangeKernel", "launching " + name);
  queue_->pending().add(name);
}

// Every platform's name, for messages: "0: Portable Computing Language".
std::string platform_list(const OpenClApi& api, const std::vector<cl_platform_id>& platforms) {
  std::string out;
  for (std::size_t k = 0; k < platforms.size(); ++k)
    out += (k == 0 ? "" : "; ") + std::to_string(k) + ": " + platform_string(api, platforms[k], CL_PLATFORM_NAME);
  return out;
}

std::vector<cl_platform_id> platforms_of(const OpenClApi& api) {
  cl_uint count = 0;
  const cl_int listed = api.clGetPlatformIDs(0, nullptr, &count);
  if (listed == CL_PLATFORM_NOT_FOUND_KHR || (listed == CL_SUCCESS && count == 0))
    throw BackendUnavailable("OpenCL (" + api.library +
                             ") has no platform: no OpenCL driver is installed (an ICD under /etc/OpenCL/vendors, "
                             "such as pocl-opencl-icd or NVIDIA's driver)");
  api.check(listed, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(count);
  api.check(api.clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");
  return platforms;
}

// PoCL reads POCL_WORK_GROUP_METHOD when it compiles a kernel (its cache key includes it), and
// its "loopvec" (the default of PoCL 3.1 with LLVM 15) vectorizes the loop over a work-group's
// threads wrongly in some race-free kernels: a thread's read of a cell it wrote earlier in the
// kernel saw the cell's old value (the default GPU schedule's fuzzer, batch 20 on PoCL; bitwise
// with "loops", "repl", and on cuda-cpu). "loops" runs the same threads unvectorized. The
// variable is set once, before the ICD loader loads any platform, and never over a value the
// environment already has; other OpenCL platforms ignore it.
void choose_pocl_work_group_method() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string method =
        config::get_one_of("opencl_pocl_work_group_method", {"loops", "loopvec", "repl", "cbs", "auto"});
    if (method == "auto") return;
    if (const char* set = std::getenv("POCL_WORK_GROUP_METHOD"); set != nullptr) {
      if (method != set && logging::debug_level() >= 1)
        logging::info("opencl: POCL_WORK_GROUP_METHOD=" + std::string(set) + " from the environment, not " + method);
      return;
    }
    ::setenv("POCL_WORK_GROUP_METHOD", method.c_str(), 0);
  });
}

}  // namespace

std::shared_ptr<Device> open_opencl(int platform, int device) {
  choose_pocl_work_group_method();
  return open_opencl_through(OpenClApi::get(), platform, device);
}

std::shared_ptr<Device> open_opencl_through(const OpenClApi& api, int platform, int device) {
  const std::vector<cl_platform_id> platforms = platforms_of(api);
  if (platform < 0 || static_cast<std::size_t>(platform) >= platforms.size())
    throw BackendUnavailable("no OpenCL platform " + std::to_string(platform) + "; the platforms are " +
                             platform_list(api, platforms));
  const cl_platform_id chosen = platforms[static_cast<std::size_t>(platform)];
  cl_uint count = 0;
  const cl_int listed = api.clGetDeviceIDs(chosen, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
  if (listed != CL_SUCCESS && listed != CL_DEVICE_NOT_FOUND) api.check(listed, "clGetDeviceIDs");
  if (device < 0 || static_cast<cl_uint>(device) >= count)
    throw BackendUnavailable("no OpenCL device " + std::to_string(device) + " on platform " + std::to_string(platform) +
                             " (" + platform_string(api, chosen, CL_PLATFORM_NAME) + "), which has " +
                             std::to_string(count) + " device(s)");
  std::vector<cl_device_id> devices(count);
  api.check(api.clGetDeviceIDs(chosen, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), "clGetDeviceIDs");
  return std::make_shared<OpenClDevice>(
      std::make_shared<OpenClQueue>(api, chosen, devices[static_cast<std::size_t>(device)]));
}

}  // namespace cannl::backends::gpu
