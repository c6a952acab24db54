#pragma once
// The Backend interface: device memory and compiled routines. Backends know nothing of tensors or
// shapes; they receive lowered loop IR and the list of nodes to bind as buffers.
//
//   auto backend = backends::make_cc_backend();          // throws BackendUnavailable if no compiler
//   auto exe = backend->compile({routine, params});
//   exe->run(buffers, statics);

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::backends {

/// A buffer in device memory, zero-initialized at allocation.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::size_t size() const = 0;
  /// Device-to-host copy of the whole buffer into `out` (out.size() == size()).
  virtual void read(std::span<std::byte> out) const = 0;
  /// Host-to-device copy of the whole buffer.
  virtual void write(std::span<const std::byte> in) = 0;
  /// Host-visible storage for CPU backends; nullptr for devices without unified memory.
  virtual std::byte* host_data() { return nullptr; }
};

/// What a backend compiles: a routine and the nodes bound to its buffer parameters, in order.
struct CompileRequest {
  ir::LoweredRoutine routine;
  std::vector<ir::NodeRef> params;
  /// The target to lower and print for instead of Backend::target() (a variant of it the tuner
  /// tries); unset: target().
  std::optional<ir::Target> target = std::nullopt;
};

/// Time spent in one kernel (a top-level statement) of a routine over the calls so far, with
/// config key `profile_kernels` (see codegen::KernelProfileTable).
///   {"forward: matmul tile 256x1024x1024 -> h1", "train_step.c", 212, 20, 41000000}
struct KernelTiming {
  std::string label;
  std::string source_file;       // the generated source's name under build_files/<exe>/
  std::int64_t source_line = 0;  // 1-based line in it
  std::int64_t calls = 0;
  std::int64_t total_ns = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs the routine. buffers[k] holds params[k]; static_values[k] is routine.statics[k].
  virtual void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) = 0;
  /// Generated source, when the backend produces any (for dumps and error messages).
  virtual const std::string& source() const = 0;
  /// The routine as it runs: after the final lowering round for the backend's target (every
  /// decision the printer spelled is in it).
  virtual const ir::LoweredRoutine& routine() const = 0;
  /// Accumulated per-kernel times of every run of this executable, in program order; empty when
  /// the routine was compiled without kernel profiling (or the backend has none).
  virtual std::vector<KernelTiming> kernel_timings() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// What this backend's hardware and runtime can run (vector width, micro-kernel shape, threads),
  /// from the configuration and the toolchain's probes: read by its default schedule, the final
  /// lowering round and its printer, and searched by the tuner.
  virtual ir::Target target() const = 0;
  /// What besides the target record decides the code this backend builds, for keys of caches
  /// kept across processes (the tuner's schedule cache): the cc backend's compiler identity
  /// and flags. The default: the backend's name.
  virtual std::string fingerprint() const { return std::string(name()); }
  /// The schedule a routine gets when the caller brings none: the default CPU schedule on CPU
  /// backends (config `automatic_cpu_schedule`), the routine unchanged where nothing pays.
  virtual ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const { return routine; }
  /// The default schedule priced for `target`, a variant of target() (the tuner's sweeps of its
  /// blocking, thresholds and team). Backends whose default schedule reads no target field keep
  /// this fallback to default_schedule(routine).
  virtual ir::LoweredRoutine default_schedule_for(const ir::LoweredRoutine& routine, const ir::Target& target) const {
    (void)target;
    return default_schedule(routine);
  }
  virtual std::unique_ptr<Buffer> allocate(std::size_t bytes) = 0;
  /// Blocks until every routine run so far has finished. Executable::run may return before the
  /// work is done on devices with a queue (GPUs); Buffer::read waits by itself, timers must call
  /// this. CPU backends run synchronously.
  virtual void synchronize() {}
  /// Compiles a scheduled routine: the schedule's final lowering round for target(), then the
  /// printer and the toolchain. Throws CompileError, or InternalError when the schedule asks for
  /// what the target cannot run and validate_parallel proves it unsound.
  virtual std::unique_ptr<Executable> compile(const CompileRequest& request) = 0;
  /// Builds the code of several requests ahead of their compile calls, as many at once as the
  /// backend can (the C backend: `cc_compile_jobs` compiler processes over all of them), so that
  /// those compiles find it in the backend's cache. Best effort: a request that fails here fails
  /// again, with its error, in its compile. Default: nothing (no build worth doing ahead).
  virtual void prebuild(std::span<const CompileRequest> requests) { (void)requests; }
};

/// The C backend: generated C compiled by the system C compiler, cached on disk, dlopen'ed.
/// Throws BackendUnavailable when no working C compiler is found.
std::shared_ptr<Backend> make_cc_backend();
/// The reference interpreter as a backend (host memory).
std::shared_ptr<Backend> make_interpreter_backend();
/// The GPU pipeline without a GPU (host memory): the default GPU schedule, the final lowering
/// round and fission for a CUDA-like device, each kernel run on the reference interpreter and
/// race-checked; a race between blocks or unbarriered threads is a RuntimeError naming the
/// kernel and the cell. For checking schedules: as slow as the interpreter.
std::shared_ptr<Backend> make_gpu_emulator_backend();
/// The CUDA backend on device `ordinal`: CUDA C++ compiled by NVRTC, run by the driver API, both
/// loaded at run time. Throws BackendUnavailable naming the missing library or device.
std::shared_ptr<Backend> make_cuda_backend(int ordinal = 0);
/// The HIP backend on device `ordinal` (AMD GPUs): HIP compiled by hiprtc to a code object for
/// the device's architecture, run by the HIP runtime, both loaded at run time (libamdhip64).
/// Config key hip_printf_fifo_size sizes the device's printf buffer. Throws BackendUnavailable
/// naming the missing library or device.
std::shared_ptr<Backend> make_hip_backend(int ordinal = 0);
/// The CUDA backend's pipeline and CUDA C++ text for an sm_90 device, compiled by the host C++
/// compiler and run on the CPU, each block's threads as fibers switched at barriers and warp
/// operations (shuffles, mma.sync, ldmatrix, cp.async emulated as the PTX ISA defines them); a
/// barrier some threads never reach, or a warp operation whose mask names a lane that does not
/// take part, is a RuntimeError naming the kernel, block and line. Config key
/// cuda_cpu_thread_order runs the blocks and threads backwards. For checking the CUDA text
/// without a GPU. Throws BackendUnavailable when no C++ compiler runs.
std::shared_ptr<Backend> make_cuda_cpu_backend();
/// The OpenCL backend on device `device` of platform `platform` (libOpenCL.so.1 loaded at run
/// time; PoCL runs it on the CPU). Throws BackendUnavailable naming what is missing.
std::shared_ptr<Backend> make_opencl_backend(int platform = 0, int device = 0);

/// The backend named `name` (cc, interpreter, gpu-emulator, cuda, cuda-cpu, hip, opencl), its device from the config keys
/// cuda_device / hip_device / opencl_platform / opencl_device; "auto" takes the first of cuda,
/// hip, opencl, cc that opens and appends to `skipped` why each one before it did not ("cuda: libcuda.so.1 not
/// found"). Throws ConfigError for an unknown name, BackendUnavailable when none opens.
std::shared_ptr<Backend> make_backend(std::string_view name, std::vector<std::string>* skipped = nullptr);

}  // namespace cannl::backends
