#pragma once
// An executable of the GPU backends: a fissioned routine's launches (kernels of one loaded module
// and device memsets) enqueued in order on the device's queue. The routine's Local arrays live in
// device scratch memory of the executable, zeroed before every run unless a memset starts them.
//
// Graphs (config `gpu_graphs`, CUDA and HIP): the launch sequence is built once into a device
// graph and each run enqueues it with one call. A graph holds the buffers' addresses and the
// argument values it was built with: a run with the same buffers replays it, after updating the
// arguments of the kernels that read a static value that changed; a run with other buffers builds
// it again (buffers that change at every run give graphs up). Where the device cannot build one,
// the kernels launch one by one (a line logged).
//
// Profiled (config `profile_kernels`, debug >= 2), every launch is bracketed by device events,
// read when the timings are asked for, so a run still only enqueues; profiled runs launch one by
// one.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/gpu/device.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/clike_printer.h"
#include "cannl/schedule/fission.h"

namespace cannl::backends::gpu {

class GpuExecutable final : public Executable {
 public:
  /// `segments` in launch order; `module` the printed kernels (one per Kernel segment) that
  /// `loaded` holds; `file` the readable source's name under build_files/<exe>/.
  GpuExecutable(std::shared_ptr<Device> device, CompileRequest request, std::vector<schedule::Segment> segments,
                codegen::GeneratedModule module, std::shared_ptr<Module> loaded, const std::string& file);

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override;
  const std::string& source() const override { return module_.text; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }
  std::vector<KernelTiming> kernel_timings() const override;

  /// The graphs built so far (each instantiated once): 1 for any number of runs on the same
  /// buffers; 0 when the routine launches its kernels one by one.
  std::size_t graph_builds() const { return graph_builds_; }

 private:
  // What binds the arguments of one step (of launches_) each run.
  struct Binding {
    std::vector<std::size_t> slots;    // the buffer slots of its first arguments
    std::vector<bool> reads_static;    // a kernel's: per static value, whether its body reads it
  };
  struct PendingTiming {
    std::size_t kernel;
    std::unique_ptr<Event> start, end;
  };

  // Sets every step's arguments for this run: the buffers of its slots, then the static values
  // (0 for those its kernel does not read, so that a graph's node changes only with those it does).
  void bind(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values);
  void launch_one_by_one(std::span<Buffer* const> buffers);
  Buffer& buffer(std::span<Buffer* const> buffers, std::size_t slot) const;
  // Enqueues the run as a graph, building or updating it first; false when graphs are off for
  // this executable (or have just failed: a line logged, and never tried again).
  bool replay(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values);
  void give_up_graphs(const std::string& why);

  std::shared_ptr<Device> device_;
  CompileRequest request_;
  std::vector<schedule::Segment> segments_;
  codegen::GeneratedModule module_;
  std::shared_ptr<Module> loaded_;
  struct Scratch {
    std::unique_ptr<Buffer> buffer;
    bool zero_each_run;  // false when the routine's first use of it is a memset anyway
  };
  std::vector<Scratch> scratch_;  // Local arrays, buffer slots params.size() on
  // Every run's steps: the scratch zero-fills, then the segments; their arguments are rebound in
  // place each run (no allocation after the first).
  std::vector<LaunchStep> launches_;
  std::vector<Binding> bindings_;
  bool profiled_;
  mutable bool untimed_ = false;  // the device cannot time: no profile rather than zeros
  mutable std::vector<KernelTiming> timings_;
  mutable std::vector<PendingTiming> pending_;

  // Graphs: declared after loaded_, so that a graph goes before the module of its kernels.
  bool use_graphs_;
  std::unique_ptr<LaunchGraph> graph_;
  std::vector<std::pair<std::uint64_t, std::size_t>> graph_buffers_, run_buffers_;  // graph_key()s
  std::vector<std::int64_t> graph_statics_;
  std::size_t graph_builds_ = 0;
  std::size_t graph_launches_ = 0;    // of graph_
  std::size_t rebuilds_in_a_row_ = 0;  // for other buffers, each after one launch of the graph before
  static constexpr std::size_t kMaxRebuildsInARow = 3;
};

/// Config `gpu_graphs`: true for auto, false for off; ConfigError otherwise.
bool gpu_graphs_enabled();

/// The graphs every GPU executable of this process has built so far (for tests: a steady
/// training loop builds none after its first step).
std::size_t graphs_built();

}  // namespace cannl::backends::gpu
