#pragma once
// An executable of the GPU backends: a fissioned routine's launches (kernels of one loaded module
// and device memsets) enqueued in order on the device's queue. The routine's Local arrays live in
// device scratch memory of the executable, zeroed before every run unless a memset starts them.
// Profiled (config
// `profile_kernels`, debug >= 2), every launch is bracketed by device events, read when the
// timings are asked for, so a run still only enqueues.

#include <map>
#include <memory>
#include <string>
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

 private:
  struct PendingTiming {
    std::size_t kernel;
    std::unique_ptr<Event> start, end;
  };

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
  /// Per segment: the buffer slots of a kernel's pointer parameters, or the memset's one slot.
  std::vector<std::vector<std::size_t>> launch_slots_;
  bool profiled_;
  mutable bool untimed_ = false;  // the device cannot time: no profile rather than zeros
  mutable std::vector<KernelTiming> timings_;
  mutable std::vector<PendingTiming> pending_;
};

}  // namespace cannl::backends::gpu
