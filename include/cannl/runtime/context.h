#pragma once
// The Context: buffers of one compilation lineage on one backend, its routines, and the order they
// must run in. A Context is a handle; copies share the same state.
//
//   auto ctx = runtime::Context::cpu();
//   auto routine = ctx.compile(comp, "train_step");   // lower, verify, generate, compile, link
//   ctx.set_values(x, host_x);                        // upload (marks x initialized)
//   ctx.run(routine, {batch_number});                 // checks initialization and dependencies
//   std::vector<double> loss = ctx.get_values(loss_node);
//
// A caller may bring the schedule instead of the backend's default one (compile_options.h):
//   ctx.compile(comp, "mm", {.schedule = runtime::ScheduleChoice::replay(trace)});
//
// Several devices: a context made with cpu_devices(n) holds n devices of the C backend, each with
// its own buffers and its own FIFO queue (a worker thread); device(k) is the handle of device k.
// Routines run asynchronously on their device's queue; host reads and writes wait for it, and
// copy() moves a node between devices in order (it waits for the source's queued work):
//   auto devices = runtime::Context::cpu_devices(2);
//   auto d0 = devices.device(0), d1 = devices.device(1);
//   d0.run(d0.compile(comp, "produce"));
//   runtime::Context::copy(d0, d1, node);      // d1 sees what "produce" wrote
//
// GPUs the same way: cuda_devices({0, 1}) holds two CUDA devices, each with its own stream (their
// routines are compiled once per device kind: the second device loads the first's cubin from the
// module cache), and copy() between them is a peer copy where the GPUs reach each other.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/ir/assignments.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/runtime/compile_options.h"
#include "cannl/runtime/kernel_profile.h"

namespace cannl::runtime {

class ContextState;

/// A compiled routine linked to one context.
class Routine {
 public:
  const std::string& name() const;
  const std::vector<ir::StaticSymbol>& statics() const;
  /// Nodes read before the routine initializes them (must be initialized when it runs).
  const std::vector<ir::NodeRef>& inputs() const;
  /// Nodes the routine writes.
  const std::vector<ir::NodeRef>& outputs() const;
  const ir::LoweredRoutine& lowered() const;
  /// Generated source (empty for the interpreter).
  const std::string& source() const;
  int id() const;

 private:
  friend class Context;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

class WeakContext;

class Context {
 public:
  /// The C backend (system C compiler). Throws BackendUnavailable without one.
  static Context cpu();
  /// The reference interpreter.
  static Context interpreter();
  /// The GPU pipeline run on the reference interpreter, every kernel race-checked (a race is a
  /// RuntimeError naming the kernel and the cell): for checking GPU schedules without a GPU.
  static Context gpu_emulator();
  /// CUDA device `ordinal` (driver and NVRTC loaded at run time). Throws BackendUnavailable
  /// naming the missing library or device.
  static Context cuda(int ordinal = 0);
  /// HIP device `ordinal` (AMD GPUs; the HIP runtime and hiprtc loaded at run time). Throws
  /// BackendUnavailable naming the missing library or device.
  static Context hip(int ordinal = 0);
  /// OpenCL device `device` of platform `platform` (PoCL runs it on the CPU). Throws
  /// BackendUnavailable naming the missing library, platform or device.
  static Context opencl(int platform = 0, int device = 0);
  /// The backend named by config key `backend` (cc | interpreter | cuda | hip | opencl | auto: the
  /// first of cuda, hip, opencl, cc that opens; the reasons for skipping the others are logged at
  /// debug 1).
  static Context from_config();
  /// `n` devices of the C backend in one context (config `multidev_num_devices` when n is 0; 0
  /// there means one per core), each with its own buffers and FIFO queue run by a worker thread.
  /// The handle returned is device 0. With kernel profiling each device profiles its own runs
  /// (the generated code's counters are per thread, so devices sharing a library count apart).
  /// Throws BackendUnavailable without a C compiler.
  static Context cpu_devices(int n = 0);
  /// The CUDA devices `ordinals` in one context (config `cuda_devices`, "0,1", when empty), in
  /// that order: device(k) is ordinal ordinals[k], each with its own stream (its queue) and
  /// buffers. Throws BackendUnavailable as cuda() does, RuntimeUsageError for an empty list.
  ///   auto gpus = runtime::Context::cuda_devices({0, 1});
  static Context cuda_devices(std::vector<int> ordinals = {});
  /// The HIP devices `ordinals` in one context, each with its own stream; copies between them are
  /// peer copies (hipMemcpyPeerAsync) where the GPUs reach each other. Throws as hip() does.
  ///   auto gpus = runtime::Context::hip_devices({0, 1});
  static Context hip_devices(std::vector<int> ordinals);
  /// Devices `devices` of OpenCL platform `platform` in one context, each with its own command
  /// queue (a device listed twice gets two queues on it). Throws as opencl() does.
  ///   auto two = runtime::Context::opencl_devices(0, {0, 1});
  static Context opencl_devices(int platform, std::vector<int> devices);
  /// One context over the given backends, one device each (all of one kind: cuda_devices opens
  /// them for CUDA; two OpenCL devices of a platform; tests bring backends on mock drivers).
  /// Devices whose backend queues its work (GPUs) need no worker thread: their routines return
  /// at once and their buffers' reads wait. Throws RuntimeUsageError for an empty list, a null
  /// backend, or backends of different kinds.
  static Context on_devices(std::vector<std::shared_ptr<backends::Backend>> backends);
  explicit Context(std::shared_ptr<backends::Backend> backend);

  /// How many devices this context holds (1 unless made with several) and which one this handle
  /// is; device(k) is the handle of device k (RuntimeUsageError when k is out of range). Each
  /// device has its own buffers, routines and initialized marks: compile a routine on every
  /// device that runs it.
  int num_devices() const;
  int device_index() const;
  Context device(int k) const;
  /// Copies `node`'s values from `src` to `dst` (devices of one context, or any two contexts),
  /// allocating its buffer on `dst` and marking it initialized there. On queued devices the copy
  /// is enqueued on dst after everything queued on src so far, and src's later work waits for
  /// it; it returns at once. Between two CUDA devices that reach each other it is a peer copy
  /// (cuMemcpyPeerAsync on dst's stream, ordered by events the same way); otherwise it goes
  /// through the host. Throws UninitializedError when src never wrote the node.
  static void copy(const Context& src, Context& dst, const ir::NodeRef& node);

  std::string_view backend_name() const;
  /// The backend this context compiles for (its target record is what CompileOptions::target
  /// varies).
  const backends::Backend& backend() const;

  /// A new context on the same backend holding a copy of every buffer of this one (same values,
  /// same initialized marks) and none of its routines. A routine compiled there is optimized
  /// exactly as here (the same nodes are held), so a schedule made in one applies to the other:
  /// the tuner times its candidates in twins without touching this context's data.
  ///   auto scratch = ctx.twin();  scratch.run(scratch.compile(comp, "mm"));  // ctx unchanged
  Context twin() const;

  /// Lowers, verifies, dumps (per `debug`), compiles and links `comp`. Records execution-order
  /// dependencies on earlier routines of this context (read-after-write, write-after-read,
  /// write-after-write) and allocates buffers for every node it touches. `name` is made a C
  /// identifier ("train step" -> "train_step"); a compile that fails (lowering, verification,
  /// the C compiler, and also linking: a buffer over the memory budget, a queued failure that
  /// surfaces at a host-init upload) leaves the context unchanged: no new buffers, no new
  /// initialized marks (a queued failure still forgets what its work did not write).
  /// The routine is scheduled by the backend's default schedule, or by `options.schedule` when
  /// set: an illegal schedule throws ScheduleError before anything is allocated or compiled.
  Routine compile(const ir::Comp& comp, const std::string& name, const CompileOptions& options = {});

  /// Builds ahead what compile(comp, name, options[k]) will need for every k, at once (the
  /// backend's prebuild: the C backend runs the compiler processes of all of them in parallel),
  /// so those compiles find it cached. Changes nothing in the context; best effort: an option
  /// that fails here (an illegal schedule, a compiler error) fails again in its compile.
  ///   ctx.prebuild(comp, "mm", {a, b, c});  ctx.compile(comp, "mm", a);  // no compiler runs
  void prebuild(const ir::Comp& comp, const std::string& name, std::span<const CompileOptions> options) const;

  /// The routine compile(comp, name) would schedule: lowered, verified and optimized against this
  /// context's buffers, before any schedule. Allocates and compiles nothing. Transforms and
  /// traces made from it apply to a compile of `comp` while the context's buffers stay the same
  /// (the optimizer keeps nodes the context already holds).
  /// With `options.materialize_all`, the routine of that placement (the schedule and target in
  /// `options` play no part).
  ir::LoweredRoutine optimized_routine(const ir::Comp& comp, const std::string& name,
                                       const CompileOptions& options = {}) const;

  /// Runs a routine. Throws UninitializedError when it reads a node no one wrote or uploaded,
  /// RuntimeUsageError when a routine it depends on never ran, a static value is out of range or
  /// missing, or the routine was compiled in another context. Nodes with host-init data count as
  /// uploaded: compile uploads them when it allocates their buffers.
  void run(const Routine& routine, std::span<const std::int64_t> static_values = {});
  /// Waits until every routine run so far has finished on the device (GPU backends and the devices
  /// of cpu_devices queue their work; reading values waits by itself). Call it before stopping a
  /// timer. Rethrows the error of a routine that failed on a device's queue.
  void synchronize();

  /// Logical (unpadded) values of a node, row-major, converted to double. Throws
  /// RuntimeUsageError when the node has no buffer here and UninitializedError when never written.
  /// Narrow floats convert exactly; integers set from doubles truncate toward zero and saturate
  /// (NaN -> 0). u4x32 cells have no double form: set writes {low 32, high 32, 0, 0} of the value
  /// as an int64 (so small v gives {v, 0, 0, 0}) and get returns the low 64 bits as an unsigned
  /// integer; use get_bytes / set_bytes for exact 128-bit values.
  ///   ctx.set_values(w, std::vector<double>{0.5, -1.0});  ctx.get_values(w) == {0.5, -1.0}
  std::vector<double> get_values(const ir::NodeRef& node) const;
  double get_value(const ir::NodeRef& node, std::int64_t flat_index) const;
  /// Uploads logical values (converted to the node's dtype); allocates the buffer if needed and
  /// marks the node initialized. Throws RuntimeUsageError on a size mismatch.
  void set_values(const ir::NodeRef& node, std::span<const double> values);
  /// Raw bytes in storage format (unpadded, row-major), for checkpoints and exact comparisons.
  std::vector<std::byte> get_bytes(const ir::NodeRef& node) const;
  void set_bytes(const ir::NodeRef& node, std::span<const std::byte> bytes);
  /// The node's logical cells in place, for zero-copy host views (the Python package's NumPy
  /// arrays and DLPack capsules): its buffer's bytes in storage format, row-major, when the
  /// backend keeps buffers in host memory (cc, interpreter) and the node has no padding margins;
  /// an empty span otherwise (a GPU buffer, a padded node: use get_bytes / set_bytes). The span
  /// stays valid while the context lives (a buffer is never moved); writing through it changes
  /// what the next run reads. Throws as get_bytes does when the node has no buffer here or was
  /// never written.
  ///   std::span<std::byte> cells = ctx.host_storage(w);   // empty on an OpenCL context
  std::span<std::byte> host_storage(const ir::NodeRef& node);

  /// Per-kernel times of this context's routines that ran with kernel profiling (config key
  /// `profile_kernels`, or debug >= 2), largest total first; empty when none did. On a device
  /// with a queue it first waits for the runs queued so far (their failures are left for
  /// synchronize).
  ///   for (const auto& row : ctx.kernel_profile()) std::cout << row.label << " " << row.total_ms();
  std::vector<KernelProfileRow> kernel_profile() const;
  /// Starts the kernel profile afresh: later kernel_profile() rows (and this context's share of
  /// kernel_profile.tsv) count only runs after this call, e.g. to leave warm-up runs out.
  void reset_kernel_profile();

  bool has_buffer(const ir::NodeRef& node) const;
  bool is_initialized(const ir::NodeRef& node) const;

 private:
  friend class WeakContext;
  friend class DeviceAverage;
  explicit Context(std::shared_ptr<ContextState> state) : state_(std::move(state)) {}
  struct DeviceGroup;
  Context(std::shared_ptr<ContextState> state, std::shared_ptr<DeviceGroup> group);
  std::shared_ptr<ContextState> state_;
  /// The devices of a multi-device context (null for a single device).
  std::shared_ptr<DeviceGroup> group_;
};

/// A handle that does not keep its context alive, for caches keyed by context (the Python
/// package remembers which context last held a tensor's values without prolonging its life).
///   WeakContext weak(ctx);  if (auto alive = weak.lock()) alive->get_values(node);
class WeakContext {
 public:
  WeakContext() = default;
  explicit WeakContext(const Context& ctx) : state_(ctx.state_), group_(ctx.group_) {}
  /// The context while some Context handle to it lives (a device of a multi-device context with
  /// its group: num_devices(), device(k)); nullopt after.
  std::optional<Context> lock() const {
    auto state = state_.lock();
    if (!state) return std::nullopt;
    return Context(std::move(state), group_.lock());
  }

 private:
  std::weak_ptr<ContextState> state_;
  std::weak_ptr<Context::DeviceGroup> group_;
};

}  // namespace cannl::runtime
