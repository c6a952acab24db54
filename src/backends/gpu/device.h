#pragma once
// The device model of the GPU backends (private to the backends layer): one device of one GPU API
// (CUDA driver + NVRTC, HIP runtime + hiprtc, or OpenCL), with its buffers, one in-order queue (CUDA stream, OpenCL
// command queue), events, copies, and compiled modules. The GPU libraries are loaded at run time
// (dlopen): cannl builds and runs its CPU backends on a machine without any of them, and opening
// a device there is a BackendUnavailable naming the missing library.
//
//   auto dev = gpu::open_opencl(0, 0);                       // or gpu::open_cuda(0)
//   auto buf = dev->allocate(1024);                          // zeroed device memory
//   auto mod = dev->load(source, {"add_k0"}, cache_dir);     // compiled once, then cached on disk
//   dev->launch(*mod, 0, geometry, {buf.get(), std::int64_t{3}});
//   dev->synchronize();

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/target.h"

namespace cannl::backends::gpu {

/// A kernel argument: a buffer of this device (its device pointer / cl_mem) or a 64-bit integer
/// (a static index; kernels declare it `int64_t` / `long`).
using KernelArg = std::variant<const Buffer*, std::int64_t>;

/// A compiled program holding kernels, loaded on its device.
class Module {
 public:
  virtual ~Module() = default;
  /// The kernels' names, in the order `load` was given them (launch addresses them by index).
  virtual const std::vector<std::string>& kernel_names() const = 0;
  /// Whether `load` took the compiled code from the module cache (nothing was compiled).
  virtual bool from_cache() const = 0;
};

/// A point in the device's queue.
class Event {
 public:
  virtual ~Event() = default;
  /// Blocks the host until everything enqueued before the event finished.
  virtual void wait() = 0;
  /// Device time between `start` and this event, both recorded with timing on the same queue,
  /// after waiting for this one; a negative value where the device cannot time (OpenCL here).
  virtual double milliseconds_since(const Event& start) {
    (void)start;
    return -1;
  }
};

/// One step of a routine's launch sequence: kernel `kernel` of a module with `geometry` and
/// `args`, or (kernel == kZeroFill) setting every byte of the buffer args[0] to 0.
struct LaunchStep {
  static constexpr std::size_t kZeroFill = static_cast<std::size_t>(-1);
  std::size_t kernel = kZeroFill;
  ir::KernelGeometry geometry;
  std::vector<KernelArg> args;
};

/// A launch sequence built once into a graph of the device's API (a CUDA or HIP graph): its steps
/// one after another, with the buffers and argument values it was built with, enqueued by one
/// call. Built by Device::build_graph.
class LaunchGraph {
 public:
  virtual ~LaunchGraph() = default;
  /// Gives kernel step `step` (an index into the steps built) the values `args` (its buffers
  /// unchanged, as many as built) for the launches after this call; launches already enqueued keep
  /// theirs. False with the driver's complaint in `why` when it refuses.
  virtual bool set_args(std::size_t step, std::span<const KernelArg> args, std::string& why) = 0;
  /// Enqueues the whole graph on the device's queue.
  virtual void launch() = 0;
};

/// What Device::stay_current returns: the device stays current on the thread while it lives.
class CurrentScope {
 public:
  virtual ~CurrentScope() = default;
};

class Device {
 public:
  virtual ~Device() = default;
  /// "cuda", "hip" or "opencl".
  virtual std::string_view api() const = 0;
  /// For messages and reports: "NVIDIA H200 (sm_90), CUDA driver 13.0",
  /// "cpu-haswell-AMD EPYC 7B13 (Portable Computing Language, OpenCL 3.0 PoCL 3.1)".
  virtual std::string description() const = 0;
  /// The launch limits (memoized at open).
  virtual const ir::GpuLimits& limits() const = 0;
  /// What changes the compiled code besides the source (architecture, compiler and driver
  /// versions, options): part of the module cache key.
  virtual std::string cache_tag() const = 0;
  /// The operand formats the device's tensor cores multiply with f32 accumulation, as this
  /// backend's dialect renders them (CUDA sm_80 and later: bf16, f16, tf32); none by default.
  virtual std::vector<ir::NarrowFormat> mma_formats() const { return {}; }
  /// Whether the device copies global to shared memory asynchronously as this backend's dialect
  /// renders it (CUDA sm_80 and later: cp.async); false by default.
  virtual bool async_copy() const { return false; }

  /// Keeps the device current on the calling thread until the scope goes, when the thread gets
  /// back what it had. Every call makes the device current for its own length anyway; a run of
  /// many calls inside one scope (a routine's launches) then switches the thread's context twice
  /// instead of twice a call. Null where the runtime has no per-thread device (OpenCL).
  virtual std::unique_ptr<CurrentScope> stay_current() { return nullptr; }

  /// Zeroed device memory; its read / write are synchronous copies ordered after everything
  /// enqueued before them. Throws ResourceError when the device is out of memory.
  virtual std::unique_ptr<Buffer> allocate(std::size_t bytes) = 0;
  /// Enqueues setting every byte of `buffer` to 0.
  virtual void fill_zero(Buffer& buffer) = 0;
  /// Enqueues a device-to-device copy of the whole of `src` into `dst` (same size).
  virtual void copy(Buffer& dst, const Buffer& src) = 0;

  /// Compiles `source` (CUDA C++ for NVRTC or HIP for hiprtc, its kernels `extern "C"` so that they keep their
  /// names; OpenCL C 1.2) and loads it, looking the compiled code
  /// up first in `cache_dir` (keyed by the source, cache_tag() and the options; "" disables the
  /// cache) and storing it there atomically after a compile. Throws CompileError carrying the
  /// compiler's log, or when a named kernel is missing.
  virtual std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                                       const std::filesystem::path& cache_dir) = 0;
  /// Enqueues kernel `kernel` of `module` with `geometry` (grid = blocks per slot, block =
  /// threads per slot; a slot of extent 0 launches nothing). shared_bytes is what the kernel
  /// declares statically: checked against the limits, no dynamic shared memory is requested.
  /// Throws RuntimeUsageError on an argument that is not this device's buffer, a module of
  /// another device, a geometry over limits(), or (OpenCL, cuda-cpu, CUDA with a driver of CUDA
  /// 12.4 or later: the devices that can read a kernel's parameter count; HIP has no such query)
  /// an argument count other than the kernel's.
  virtual void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
                      std::span<const KernelArg> args) = 0;
  /// Whether the device's API has graphs (CUDA, HIP): build_graph may then still fail, saying why.
  virtual bool has_graphs() const { return false; }
  /// `steps` (kernels of `module`, in order, each after the one before) as one graph named
  /// `label` (for messages); nullptr with the reason in `why` when the driver lacks the graph
  /// entry points or refuses to build or instantiate it. Throws like launch on a step that launch
  /// would refuse.
  virtual std::unique_ptr<LaunchGraph> build_graph(Module& module, std::span<const LaunchStep> steps,
                                                   const std::string& label, std::string& why) {
    (void)module, (void)steps, (void)label;
    why = "the " + std::string(api()) + " backend has no graphs";
    return nullptr;
  }
  /// What a graph built with `buffer` depends on: its device address and size (0 where the
  /// device has no graphs). Throws RuntimeUsageError for another device's buffer.
  virtual std::pair<std::uint64_t, std::size_t> graph_key(const Buffer& buffer) const {
    return {0, buffer.size()};
  }
  /// Enqueues an event; with `timing`, one that Event::milliseconds_since can measure from.
  virtual std::unique_ptr<Event> record(bool timing = false) = 0;
  /// Blocks until the queue is empty; a kernel's failure surfaces here (or at the next read) as a
  /// RuntimeError naming it.
  virtual void synchronize() = 0;
};

/// Device `ordinal` of the CUDA driver (libcuda.so.1) with NVRTC (libnvrtc.so.*). Throws
/// BackendUnavailable naming the library that is missing, or "no CUDA device <ordinal>".
std::shared_ptr<Device> open_cuda(int ordinal);
/// Device `ordinal` of the HIP runtime (libamdhip64.so) with hiprtc; `printf_fifo_bytes` > 0
/// sizes the device's printf buffer. Throws BackendUnavailable naming the library that is missing,
/// hipInit's failure (no AMD GPU), or "no HIP device <ordinal>".
std::shared_ptr<Device> open_hip(int ordinal, std::size_t printf_fifo_bytes = 0);
/// Device `device` of OpenCL platform `platform` (libOpenCL.so.1). Throws BackendUnavailable
/// naming the library, or the platform / device that does not exist.
std::shared_ptr<Device> open_opencl(int platform, int device);

/// The cuda-cpu test device (cuda_on_cpu_device.cpp): the CUDA C++ a CUDA device would get (an
/// sm_90 one: tensor cores, cp.async, warps of 32), compiled by the host C++ compiler of the cc
/// backend and run on the CPU, each block's threads as fibers (cuda_on_cpu_runner.h). For
/// checking the CUDA text on a machine without a GPU; it needs no GPU library. Throws
/// BackendUnavailable when no C++ compiler runs.
std::shared_ptr<Device> open_cuda_on_cpu();

/// The tensor-core formats the CUDA dialect renders for architecture `arch` ("sm_90", "sm_90a"):
/// bf16, f16 and tf32 (mma.sync, ldmatrix) from sm_80 on, none before or for anything else.
///   cuda_mma_formats("sm_75").empty()
std::vector<ir::NarrowFormat> cuda_mma_formats(const std::string& arch);

/// Whether architecture `arch` has cp.async (sm_80 and later; false for anything else).
///   cuda_async_copy("sm_80") && !cuda_async_copy("sm_75")
bool cuda_async_copy(const std::string& arch);

/// NVRTC alone (no driver needed): CUDA source -> PTX for `arch` ("sm_90"). Throws
/// BackendUnavailable when libnvrtc cannot be loaded, CompileError with NVRTC's log otherwise.
std::string nvrtc_compile(const std::string& source, const std::string& arch);

}  // namespace cannl::backends::gpu
