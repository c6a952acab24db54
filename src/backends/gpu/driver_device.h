#pragma once
// What the CUDA and HIP devices share, written once: buffers, modules, events, launch graphs, and
// the device's memory, launch and graph calls. Both runtimes have the same model (one stream per
// device, modules of named kernels, an 8-byte parameter array per launch, graphs of kernel and
// memset nodes); they differ in how a device becomes current (a primary context against
// hipSetDevice), how two devices reach each other, and how kernels compile (NVRTC against hiprtc).
// Those stay in cuda_device.cpp and hip_device.cpp, whose Queue classes (CudaQueue, HipQueue) name
// each runtime call for the templates here:
//
//   static constexpr const char* kApi, kRuntime;  // "CUDA", "CUDA driver": for messages
//   types Pointer, ModuleHandle, Function, EventHandle, Graph, GraphNode, GraphExec, KernelNode
//   type Caller; Caller make_current(), make_current_quietly(); restore_quietly(caller) (see Current)
//   synchronize(), drain_quietly(), and QueueBase's calls
//   Pointer allocate(bytes) (at least 1 byte); free_quietly(p); zero_async(p, bytes); to_host_async(host, p, bytes);
//   from_host_async(p, host, bytes); device_copy_async(dst, src, bytes)
//   EventHandle record_event(timing); destroy_event_quietly(e); wait_event(e); elapsed_ms(a, b)
//   ModuleHandle load_image(image, problem); Function function(module, name, problem);
//   KernelFacts facts(function, name); unload_quietly(module); launch(function, geometry, params, name)
//   graphs_missing(); kernel_node(function, geometry); and the graph calls of build_graph below.
//
// Each Queue call checks its result with the runtime's own call name (cuMemAlloc_v2, hipMalloc),
// so the messages a user reads name the call that failed. Every public call of a device makes it
// current for its length (a Current): the runtime may call from any thread, the current device is
// per thread, and the thread gets back what it had (its caller's context or device).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backends/gpu/device.h"
#include "backends/gpu/launch_checks.h"
#include "backends/gpu/module_cache.h"
#include "backends/gpu/param_array.h"
#include "cannl/support/error.h"

namespace cannl::backends::gpu::driver {

// The state and checks every Queue has: the runtime's table `Api` (whose `check` throws for a
// failed call), the kernels enqueued since the last synchronization, and `Result`'s success value.
template <class Api, typename Result, Result kSuccess>
class QueueBase {
 public:
  const Api& api() const { return api_; }
  PendingKernels& pending() { return pending_; }
  /// Checks a call that may report a failure of earlier work on the stream: the message names
  /// the kernels enqueued since the last synchronization.
  void check_queue(Result result, const char* call, const std::string& doing = "") const {
    if (result == kSuccess) return;
    const std::string pending = pending_.describe();
    api_.check(result, call, doing + (doing.empty() || pending.empty() ? "" : "; ") + pending);
  }

 protected:
  explicit QueueBase(const Api& api) : api_(api) {}
  /// Whether `result` is success; otherwise `why` says which call failed and how.
  bool succeeded(Result result, const char* call, std::string& why) const {
    if (result == kSuccess) return true;
    why = std::string(call) + " failed: " + api_.describe(result);
    return false;
  }

  const Api& api_;
  PendingKernels pending_;
};

// The queue's device current on this thread while a call of cannl's runs, and the caller's back
// when it returns: whatever the thread had current (PyTorch's device, another library's context,
// none) it has again, also when the call throws. Queue::make_current() returns the caller's
// (a Queue::Caller) and restore_quietly(caller) puts it back. The quiet form is for destructors,
// which must not throw: they may run after a kernel fault poisoned the context, or at exit after
// the driver shut down, and what they release goes with the context.
struct Quietly {};
inline constexpr Quietly kQuietly;

template <class Queue>
class [[nodiscard]] Current {
 public:
  explicit Current(const Queue& queue) : queue_(queue), caller_(queue.make_current()) {}
  Current(const Queue& queue, Quietly) : queue_(queue), caller_(queue.make_current_quietly()) {}
  ~Current() { queue_.restore_quietly(caller_); }
  Current(const Current&) = delete;
  Current& operator=(const Current&) = delete;

 private:
  const Queue& queue_;
  typename Queue::Caller caller_;
};

// What the runtime tells of a loaded kernel, for the launch checks (launch_checks.h): its
// parameter count, -1 where the runtime cannot tell, and the most threads a block of it may have
// (its registers or launch bounds may allow fewer than the device), 0 where unknown.
struct KernelFacts {
  std::int64_t arity = -1;
  std::int64_t max_threads = 0;
};

// The pointer type's value in a kernel's 8-byte parameter slot and a graph key.
template <typename Pointer>
unsigned long long pointer_bits(Pointer p) {
  if constexpr (std::is_pointer_v<Pointer>) {
    return reinterpret_cast<unsigned long long>(p);
  } else {
    return static_cast<unsigned long long>(p);
  }
}

template <class Queue>
class DeviceBuffer final : public Buffer {
 public:
  using Pointer = typename Queue::Pointer;
  // The device is current. A zero-byte buffer still gets an address of its own (the runtimes
  // reject 0 bytes), zeroed in stream order: whatever uses the buffer is enqueued after this.
  DeviceBuffer(std::shared_ptr<Queue> queue, std::size_t bytes) : queue_(std::move(queue)), size_(bytes) {
    pointer_ = queue_->allocate(bytes);
    try {
      queue_->zero_async(pointer_, std::max<std::size_t>(bytes, 1));
    } catch (...) {
      queue_->free_quietly(pointer_);
      throw;
    }
  }
  ~DeviceBuffer() override {
    // Freeing may not wait for the work still using the buffer: drain the stream first. Buffers
    // live as long as the routines using them, so this wait is rare.
    const Current current(*queue_, kQuietly);
    queue_->drain_quietly();
    queue_->free_quietly(pointer_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t size() const override { return size_; }

  // Enqueued and then waited for: ordered after every kernel before them (the runtimes'
  // synchronous copies would not wait for a non-blocking stream).
  void read(std::span<std::byte> out) const override {
    check_size(out.size(), "read");
    const Current current(*queue_);
    if (size_ > 0) queue_->to_host_async(out.data(), pointer_, size_);
    queue_->synchronize();
  }
  void write(std::span<const std::byte> in) override {
    check_size(in.size(), "write");
    const Current current(*queue_);
    if (size_ > 0) queue_->from_host_async(pointer_, in.data(), size_);
    queue_->synchronize();
  }

  Pointer pointer() const { return pointer_; }
  const Queue* queue() const { return queue_.get(); }

 private:
  void check_size(std::size_t bytes, const char* what) const {
    if (bytes != size_)
      throw RuntimeUsageError(std::string(Queue::kApi) + " buffer " + what + ": the host side has " +
                              std::to_string(bytes) + " bytes but the buffer has " + std::to_string(size_));
  }
  std::shared_ptr<Queue> queue_;
  std::size_t size_;
  Pointer pointer_{};
};

// `buffer` as one of `queue`'s buffers (RuntimeUsageError otherwise).
template <class Queue>
const DeviceBuffer<Queue>& own_buffer(const Queue& queue, const Buffer& buffer, const char* what) {
  const auto* own = dynamic_cast<const DeviceBuffer<Queue>*>(&buffer);
  if (own == nullptr || own->queue() != &queue)
    throw RuntimeUsageError(std::string(Queue::kApi) + " " + what + ": the buffer is not one of this device's");
  return *own;
}

template <class Queue>
class DeviceModule final : public Module {
 public:
  DeviceModule(std::shared_ptr<Queue> queue, typename Queue::ModuleHandle module, std::vector<std::string> names,
               bool from_cache)
      : queue_(std::move(queue)), module_(module), names_(std::move(names)), from_cache_(from_cache) {}
  ~DeviceModule() override {
    // Its kernels may still be running.
    const Current current(*queue_, kQuietly);
    queue_->drain_quietly();
    queue_->unload_quietly(module_);
  }
  DeviceModule(const DeviceModule&) = delete;
  DeviceModule& operator=(const DeviceModule&) = delete;

  const std::vector<std::string>& kernel_names() const override { return names_; }
  bool from_cache() const override { return from_cache_; }
  const Queue* queue() const { return queue_.get(); }
  std::vector<typename Queue::Function>& functions() { return functions_; }
  /// What the runtime tells of each of functions().
  std::vector<KernelFacts>& facts() { return facts_; }

 private:
  std::shared_ptr<Queue> queue_;
  typename Queue::ModuleHandle module_;
  std::vector<std::string> names_;
  std::vector<typename Queue::Function> functions_;
  std::vector<KernelFacts> facts_;
  bool from_cache_;
};

template <class Queue>
class DeviceEvent final : public Event {
 public:
  // Recorded on the stream at once; the device is current. (queue_ is declared before event_:
  // it is set when record_event runs.)
  DeviceEvent(std::shared_ptr<Queue> queue, bool timing)
      : queue_(std::move(queue)), event_(queue_->record_event(timing)) {}
  ~DeviceEvent() override {
    const Current current(*queue_, kQuietly);
    queue_->destroy_event_quietly(event_);
  }
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  typename Queue::EventHandle handle() const { return event_; }

  void wait() override {
    const Current current(*queue_);
    queue_->wait_event(event_);
  }
  double milliseconds_since(const Event& start) override {
    const auto* begin = dynamic_cast<const DeviceEvent*>(&start);
    if (begin == nullptr) return -1;
    const Current current(*queue_);
    queue_->wait_event(event_);
    return queue_->elapsed_ms(begin->event_, event_);
  }

 private:
  std::shared_ptr<Queue> queue_;
  typename Queue::EventHandle event_;
};

// Writes the values of `args` (a launch of `kernel` on `queue`) into `out`: device pointers and
// statics (as long long), 8 bytes each.
template <class Queue>
void resolve_args(const Queue& queue, const std::string& kernel, std::span<const KernelArg> args, ParamArray& out) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (const auto* buffer = std::get_if<const Buffer*>(&args[k])) {
      if (*buffer == nullptr)
        throw RuntimeUsageError(std::string(Queue::kApi) + " launch of " + kernel + ": argument " +
                                std::to_string(k) + " is null");
      out.values()[k] = pointer_bits(own_buffer(queue, **buffer, "launch argument").pointer());
    } else {
      out.values()[k] = static_cast<unsigned long long>(std::get<std::int64_t>(args[k]));
    }
  }
}

// A launch sequence as an instantiated graph (see DriverDevice::build_graph). Holds the queue,
// not the module: its owner keeps the module alive as long as the graph.
template <class Queue>
class DeviceGraph final : public LaunchGraph {
 public:
  // Per step: its kernel node (null for an empty grid or a memset) and the launch's parameters
  // less the argument array.
  struct Step {
    typename Queue::GraphNode node = nullptr;
    typename Queue::KernelNode params{};
    std::string name;
    std::size_t arity = 0;
  };
  DeviceGraph(std::shared_ptr<Queue> queue, typename Queue::Graph graph, typename Queue::GraphExec exec,
              std::vector<Step> steps, std::string label)
      : queue_(std::move(queue)), graph_(graph), exec_(exec), steps_(std::move(steps)), label_(std::move(label)) {}
  ~DeviceGraph() override {
    const Current current(*queue_, kQuietly);
    queue_->release_graph_quietly(graph_, exec_);
  }
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  bool set_args(std::size_t step, std::span<const KernelArg> args, std::string& why) override {
    Step& s = steps_.at(step);
    if (s.node == nullptr) return true;  // an empty grid: no node
    internal_check(args.size() == s.arity, [&] { return "graph step " + s.name + " set with another argument count"; });
    ParamArray values(args.size());
    resolve_args(*queue_, s.name, args, values);
    const Current current(*queue_);
    return queue_->set_kernel_node(exec_, s.node, s.params, values.pointers(), why);  // the runtime copies the values
  }
  void launch() override {
    const Current current(*queue_);
    queue_->launch_graph(exec_, label_);
    queue_->pending().add(label_);
  }

 private:
  std::shared_ptr<Queue> queue_;
  typename Queue::Graph graph_;  // kept: its nodes name those of exec_ whose arguments set_args updates
  typename Queue::GraphExec exec_;
  std::vector<Step> steps_;
  std::string label_;
};

// The Device calls both runtimes make alike. A subclass opens the device (limits, architecture,
// compiler) and says how a kernel's source becomes an image the runtime loads.
template <class Queue_>
class DriverDevice : public Device {
 public:
  using Queue = Queue_;
  using OwnBuffer = DeviceBuffer<Queue>;
  using OwnModule = DeviceModule<Queue>;
  using OwnEvent = DeviceEvent<Queue>;

  std::unique_ptr<CurrentScope> stay_current() override { return std::make_unique<Held>(*queue_); }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override {
    const Current current(*queue_);
    return std::make_unique<OwnBuffer>(queue_, bytes);
  }
  void fill_zero(Buffer& buffer) override {
    const auto& b = own(buffer, "fill_zero");
    const Current current(*queue_);
    queue_->zero_async(b.pointer(), std::max<std::size_t>(b.size(), 1));
  }
  void copy(Buffer& dst, const Buffer& src) override {
    const auto& to = own(dst, "copy (destination)");
    const auto& from = own(src, "copy (source)");
    if (to.size() != from.size())
      throw RuntimeUsageError(std::string(Queue::kApi) + " copy: the destination has " + std::to_string(to.size()) +
                              " bytes, the source " + std::to_string(from.size()));
    const Current current(*queue_);
    if (to.size() > 0) queue_->device_copy_async(to.pointer(), from.pointer(), to.size());
  }

  std::shared_ptr<Module> load(const std::string& source, const std::vector<std::string>& kernels,
                               const std::filesystem::path& cache_dir) override;
  void launch(Module& module, std::size_t kernel, const ir::KernelGeometry& geometry,
              std::span<const KernelArg> args) override {
    OwnModule& m = own_kernel(module, kernel, "launch");
    const std::string& name = m.kernel_names()[kernel];
    // The runtime reads as many values as the kernel declares, whatever `args` holds.
    check_arity(Queue::kApi, name, args.size(), m.facts()[kernel].arity);
    if (!launchable(geometry, limits_, name)) return;
    // Over the kernel's own limit the runtime fails the launch opaquely (out of resources).
    check_kernel_threads(geometry, m.facts()[kernel].max_threads, name);
    ParamArray params(args.size());
    resolve_args(*queue_, name, args, params);
    const Current current(*queue_);
    queue_->launch(m.functions()[kernel], geometry, params.pointers(), name);
    queue_->pending().add(name);
  }
  bool has_graphs() const override { return true; }
  std::unique_ptr<LaunchGraph> build_graph(Module& module, std::span<const LaunchStep> steps,
                                           const std::string& label, std::string& why) override;
  std::pair<std::uint64_t, std::size_t> graph_key(const Buffer& buffer) const override {
    const OwnBuffer& b = own(buffer, "graph argument");
    return {pointer_bits(b.pointer()), b.size()};
  }
  std::unique_ptr<Event> record(bool timing) override {
    const Current current(*queue_);
    return std::make_unique<OwnEvent>(queue_, timing);
  }
  void synchronize() override {
    const Current current(*queue_);
    queue_->synchronize();
  }
  const ir::GpuLimits& limits() const override { return limits_; }

  Queue& queue() const { return *queue_; }
  const OwnBuffer& own(const Buffer& buffer, const char* what) const { return own_buffer(*queue_, buffer, what); }
  /// `module` as one of this device's, with kernel `kernel` (RuntimeUsageError otherwise).
  OwnModule& own_kernel(Module& module, std::size_t kernel, const char* what) const {
    auto* m = dynamic_cast<OwnModule*>(&module);
    if (m == nullptr || m->queue() != queue_.get())
      throw RuntimeUsageError(std::string(Queue::kApi) + " " + what + ": the module was not loaded on this device");
    if (kernel >= m->functions().size())
      throw RuntimeUsageError(std::string(Queue::kApi) + " " + what + ": kernel " + std::to_string(kernel) +
                              " of a module of " + std::to_string(m->functions().size()));
    return *m;
  }

 protected:
  explicit DriverDevice(std::shared_ptr<Queue> queue) : queue_(std::move(queue)) {}

  /// The file extension of the images in the module cache ("cubin").
  virtual std::string image_extension() const = 0;
  /// The image of `source` (module `name`), compiled; throws CompileError.
  virtual std::string compile(const std::string& source, const std::string& name) const = 0;
  /// Why the runtime cannot load a freshly compiled image: the CompileError's message.
  virtual std::string unloadable(const std::string& name, const std::string& problem) const = 0;

  std::shared_ptr<Queue> queue_;
  ir::GpuLimits limits_;

 private:
  struct Held final : CurrentScope {
    explicit Held(const Queue& queue) : current(queue) {}
    Current<Queue> current;
  };
  // A graph under construction, destroyed unless handed on.
  struct GraphOwner {
    Queue* queue;
    typename Queue::Graph graph;
    GraphOwner(Queue* q, typename Queue::Graph g) : queue(q), graph(g) {}
    GraphOwner(const GraphOwner&) = delete;
    GraphOwner& operator=(const GraphOwner&) = delete;
    ~GraphOwner() {
      if (graph != nullptr) queue->destroy_graph_quietly(graph);
    }
  };

  std::shared_ptr<OwnModule> resolve(typename Queue::ModuleHandle module, const std::vector<std::string>& kernels,
                                   bool from_cache) const;
};

template <class Queue>
std::shared_ptr<DeviceModule<Queue>> DriverDevice<Queue>::resolve(typename Queue::ModuleHandle module,
                                                                  const std::vector<std::string>& kernels,
                                                                  bool from_cache) const {
  // Owned from here on: a missing kernel unloads the module with it.
  auto out = std::make_shared<OwnModule>(queue_, module, kernels, from_cache);
  for (const auto& name : kernels) {
    std::string problem;
    const typename Queue::Function function = queue_->function(module, name, problem);
    if (function == nullptr)
      throw CompileError("the compiled " + std::string(Queue::kApi) + " module has no kernel " + name + " (" + problem +
                         "); kernels must be declared extern \"C\" __global__");
    out->functions().push_back(function);
    out->facts().push_back(queue_->facts(function, name));
  }
  return out;
}

template <class Queue>
std::shared_ptr<Module> DriverDevice<Queue>::load(const std::string& source, const std::vector<std::string>& kernels,
                                                  const std::filesystem::path& cache_dir) {
  const Current current(*queue_);
  const std::string name = kernels.empty() ? "module" : kernels.front();
  const ModuleCacheEntry entry = module_cache_entry(cache_dir, name, image_extension(), source + "\n" + cache_tag());
  std::string problem;
  if (auto cached = read_cached_module(entry)) {
    if (auto module = queue_->load_image(*cached, problem)) return resolve(module, kernels, true);
    discard_cached_module(entry, "the " + std::string(Queue::kRuntime) + " refused it: " + problem);
  }
  const std::string image = compile(source, name);
  auto module = queue_->load_image(image, problem);
  if (module == nullptr) throw CompileError(unloadable(name, problem));
  auto loaded = resolve(module, kernels, false);
  store_cached_module(entry, image);
  return loaded;
}

// Built explicitly rather than captured from a stream: the sequence is known before any launch,
// the nodes are at hand for updating their arguments, and nothing else enqueued on the stream
// meanwhile (or a capture-unsafe call on another thread) can end up in the graph or invalidate it.
// The nodes form one chain, each depending on the one before: the order the stream would give.
template <class Queue>
std::unique_ptr<LaunchGraph> DriverDevice<Queue>::build_graph(Module& module, std::span<const LaunchStep> steps,
                                                              const std::string& label, std::string& why) {
  if (std::string missing = queue_->graphs_missing(); !missing.empty()) {
    why = missing;
    return nullptr;
  }
  // Every step checked as launch checks it before the runtime sees any.
  using Step = typename DeviceGraph<Queue>::Step;
  std::vector<Step> nodes(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    if (step.kernel == LaunchStep::kZeroFill) {
      if (step.args.size() != 1 || !std::holds_alternative<const Buffer*>(step.args[0]))
        throw InternalError("a zero-fill step of " + label + " takes one buffer");
      continue;
    }
    OwnModule& m = own_kernel(module, step.kernel, "graph");
    check_arity(Queue::kApi, m.kernel_names()[step.kernel], step.args.size(), m.facts()[step.kernel].arity);
    if (!launchable(step.geometry, limits_, m.kernel_names()[step.kernel])) continue;
    check_kernel_threads(step.geometry, m.facts()[step.kernel].max_threads, m.kernel_names()[step.kernel]);
    nodes[k].name = m.kernel_names()[step.kernel];
    nodes[k].arity = step.args.size();
    nodes[k].params = queue_->kernel_node(m.functions()[step.kernel], step.geometry);
  }
  const Current current(*queue_);
  typename Queue::Graph graph = nullptr;
  if (!queue_->create_graph(graph, why)) return nullptr;
  // Destroyed on the way out unless a DeviceGraph took it: its nodes are the handles for updating
  // the instance.
  GraphOwner owned{queue_.get(), graph};
  typename Queue::GraphNode previous = nullptr;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const LaunchStep& step = steps[k];
    typename Queue::GraphNode node = nullptr;
    if (step.kernel == LaunchStep::kZeroFill) {
      const OwnBuffer& b = own(*std::get<const Buffer*>(step.args[0]), "graph zero fill");
      // As fill_zero.
      if (!queue_->add_memset_node(node, graph, previous, b.pointer(), std::max<std::size_t>(b.size(), 1), why))
        return nullptr;
    } else {
      if (nodes[k].params.func == nullptr) continue;  // an empty grid launches nothing
      ParamArray params(step.args.size());
      resolve_args(*queue_, nodes[k].name, step.args, params);
      if (!queue_->add_kernel_node(node, graph, previous, nodes[k].params, params.pointers(), why)) return nullptr;
      nodes[k].node = node;
    }
    previous = node;
  }
  typename Queue::GraphExec exec = nullptr;
  if (!queue_->instantiate(exec, graph, why)) return nullptr;
  owned.graph = nullptr;
  return std::make_unique<DeviceGraph<Queue>>(queue_, graph, exec, std::move(nodes), label);
}

// Makes `waiting`'s stream wait for everything enqueued on `done`'s stream so far (the event may
// go at once: the runtime releases it after the wait).
template <class Queue>
void stream_waits_for(DriverDevice<Queue>& waiting, DriverDevice<Queue>& done) {
  const std::unique_ptr<Event> event = done.record(false);
  Queue& queue = waiting.queue();
  const Current current(queue);
  queue.wait_for_event(static_cast<const DeviceEvent<Queue>&>(*event).handle());
}

// A copy between two devices of one runtime: the devices and their buffers.
template <class ConcreteDevice>
struct PeerCopy {
  ConcreteDevice& to;
  ConcreteDevice& from;
  const typename ConcreteDevice::OwnBuffer& target;
  const typename ConcreteDevice::OwnBuffer& source;
};

// The copy from `src` into `dst` when both devices are `ConcreteDevice`s of one runtime library
// and the buffers theirs, of one size (RuntimeUsageError otherwise); nullopt when either device
// is of another kind.
template <class ConcreteDevice>
std::optional<PeerCopy<ConcreteDevice>> peer_copy_of(Device& dst_device, Buffer& dst, Device& src_device,
                                                     const Buffer& src) {
  auto* to = dynamic_cast<ConcreteDevice*>(&dst_device);
  auto* from = dynamic_cast<ConcreteDevice*>(&src_device);
  if (to == nullptr || from == nullptr || &to->queue().api() != &from->queue().api()) return std::nullopt;
  const auto& target = to->own(dst, "peer copy (destination)");
  const auto& source = from->own(src, "peer copy (source)");
  if (target.size() != source.size())
    throw RuntimeUsageError(std::string(ConcreteDevice::Queue::kApi) + " peer copy: the destination has " +
                            std::to_string(target.size()) + " bytes, the source " + std::to_string(source.size()));
  return PeerCopy<ConcreteDevice>{*to, *from, target, source};
}

// The words of `words`, separated by single spaces (a cache tag's compiler options).
inline std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

}  // namespace cannl::backends::gpu::driver
