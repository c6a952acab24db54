// The GPU pipeline without a GPU: the default GPU schedule, the final lowering round and fission
// for a CUDA-like device, each kernel then run on the reference interpreter and watched by the
// race checker (interp::KernelRaceCheck). A race, between two blocks or between two threads of
// a block with no barrier between them, is a RuntimeError naming the kernel and the cell, where
// a GPU would compute wrong numbers on some runs. Slow (the interpreter): for checking a
// schedule, a hand-made one above all, not for training.
#include <array>
#include <utility>
#include <cstring>
#include <string>
#include <vector>

#include "backends/gpu/gpu_backend.h"
#include "backends/host_memory.h"
#include "backends/interpreter_memory.h"
#include "cannl/backends/backend.h"
#include "cannl/interp/race_check.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/fission.h"
#include "cannl/support/error.h"

namespace cannl::backends {

namespace {

std::string slots_text(const std::array<std::int64_t, 3>& x) {
  return std::to_string(x[0]) + " x " + std::to_string(x[1]) + " x " + std::to_string(x[2]);
}

// The kernels of one routine, run in launch order on the interpreter.
class EmulatedKernels final : public Executable {
 public:
  EmulatedKernels(CompileRequest lowered, std::vector<schedule::Segment> segments)
      : request_(std::move(lowered)), segments_(std::move(segments)), memory_(request_.routine, request_.params) {
    for (std::size_t k = 0; k < segments_.size(); ++k) source_ += describe(k) + "\n";
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    const InterpreterMemory::Run memory = memory_.views(request_, buffers, static_values);
    for (std::size_t k = 0; k < segments_.size(); ++k) {
      const schedule::Segment& s = segments_[k];
      if (s.kind == schedule::Segment::Kind::Zero) {
        const std::span<std::byte> cells = memory.views.at(s.zeroed->id);
        std::memset(cells.data(), 0, cells.size());
        continue;
      }
      const ir::LoweredRoutine kernel{request_.routine.name + "_k" + std::to_string(k), s.body, request_.routine.statics};
      if (s.geometry.serial() || !interp::race_checkable(s.body)) {
        interp::run(kernel, memory.views, static_values);
        continue;
      }
      interp::KernelRaceCheck check(s.geometry, s.body);
      interp::run(kernel, memory.views, static_values, &check);
      if (!check.race().empty())
        throw RuntimeError("gpu-emulator: routine '" + request_.routine.name + "', launch " + std::to_string(k) +
                           " of " + std::to_string(segments_.size()) + ": " + check.race() + "\n" + describe(k));
    }
  }

  // The launches as loop IR, each with its geometry: what the GPU backends would print as kernels.
  const std::string& source() const override { return source_; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }

 private:
  CompileRequest request_;
  std::vector<schedule::Segment> segments_;
  InterpreterMemory memory_;
  std::string source_;

  std::string describe(std::size_t k) const {
    const schedule::Segment& s = segments_[k];
    if (s.kind == schedule::Segment::Kind::Zero) return "# launch " + std::to_string(k) + ": zero " + s.zeroed->debug_name();
    return "# launch " + std::to_string(k) + ": grid " + slots_text(s.geometry.grid) + ", block " +
           slots_text(s.geometry.block) + "\n" +
           ir::print_loop_ir({request_.routine.name + "_k" + std::to_string(k), s.body, request_.routine.statics});
  }
};

class GpuEmulatorBackend final : public Backend {
 public:
  std::string_view name() const override { return "gpu-emulator"; }
  // An H200's limits (sm_90, 132 multiprocessors: the kernels such a GPU gets), without tensor
  // cores or asynchronous copies (nothing here runs them), with the GPU backends' config keys.
  ir::Target target() const override {
    ir::Target t = ir::generic_gpu_target(ir::sm90_gpu_limits());
    t.backend = "gpu-emulator";
    return configured_gpu_target(std::move(t), {}, false);
  }
  ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const override {
    return default_schedule_for(routine, target());
  }
  ir::LoweredRoutine default_schedule_for(const ir::LoweredRoutine& routine, const ir::Target& target) const override {
    return automatic_gpu_schedule(routine, target);
  }
  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return std::make_unique<CpuBuffer>(bytes); }
  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    auto [lowered, segments] = gpu_launches(request.routine, request.target.value_or(target()));
    return std::make_unique<EmulatedKernels>(CompileRequest{std::move(lowered), request.params}, std::move(segments));
  }
};

}  // namespace

std::shared_ptr<Backend> make_gpu_emulator_backend() { return std::make_shared<GpuEmulatorBackend>(); }

}  // namespace cannl::backends
