// Context::run: the checks that make running routines in a wrong order a clear error, then
// execution.
#include <chrono>
#include <string>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "runtime/context_state.h"
#include "runtime/dependencies.h"
#include "runtime/routine_data.h"

namespace cannl::runtime {

namespace {

void check_static_values(const RoutineData& data, std::span<const std::int64_t> values) {
  if (values.size() != data.statics.size())
    throw RuntimeUsageError("routine '" + data.name + "' takes " +
                            std::to_string(data.statics.size()) + " static index value(s) but " +
                            std::to_string(values.size()) + " were given");
  for (std::size_t k = 0; k < values.size(); ++k) {
    const auto& symbol = data.statics[k];
    if (symbol.range > 0 && (values[k] < 0 || values[k] >= symbol.range))
      throw RuntimeUsageError("routine '" + data.name + "': static index '" + symbol.name +
                              "' = " + std::to_string(values[k]) + " is out of its range [0, " +
                              std::to_string(symbol.range) + ")");
  }
}

/// The routine that writes `node` for `data` (a read-after-write dependency), if any.
const Dependency* writer_of(const RoutineData& data, const ir::TensorNode& node) {
  for (const auto& dep : data.dependencies)
    if (dep.kind == DependencyKind::ReadAfterWrite && dep.node->id == node.id) return &dep;
  return nullptr;
}

void check_inputs_initialized(const ContextState& state, const RoutineData& data) {
  for (const auto& node : data.inputs) {
    if (state.initialized.contains(node->id)) continue;
    std::string message = "routine '" + data.name + "' reads node " + describe_node(*node) + " which " +
                          state.why_uninitialized(node->id) +
                          "; upload it with set_values or run the routine that computes it first";
    if (const Dependency* writer = writer_of(data, *node); writer && !state.lost_values.contains(node->id))
      message += " (routine '" + writer->routine_name + "' writes it but has not run yet)";
    throw UninitializedError(message);
  }
}

/// After a run of a routine compiled with kernel profiling: its wall time and kernel totals. On
/// the thread that ran it (a device's worker: the executable's totals are its own).
void record_kernel_profile(ContextState& state, const RoutineData& data,
                           std::chrono::steady_clock::duration wall) {
  std::vector<backends::KernelTiming> kernels = data.executable->kernel_timings();
  if (kernels.empty()) return;
  std::lock_guard lock(state.profile_mutex);
  RoutineProfile& profile = state.kernel_profiles[data.id];
  profile.name = data.name;
  profile.runs += 1;
  profile.run_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count();
  profile.kernels = std::move(kernels);
}

void run_and_profile(ContextState& state, const RoutineData& data, std::span<backends::Buffer* const> buffers,
                     std::span<const std::int64_t> static_values) {
  const auto start = std::chrono::steady_clock::now();
  data.executable->run(buffers, static_values);
  record_kernel_profile(state, data, std::chrono::steady_clock::now() - start);
}

}  // namespace

void Context::run(const Routine& routine, std::span<const std::int64_t> static_values) {
  if (!routine.impl_) throw RuntimeUsageError("run: this Routine is empty; use Context::compile");
  RoutineData& data = *routine.impl_;
  if (data.owner.lock() != state_)
    throw RuntimeUsageError("routine '" + data.name +
                            "' was compiled in a different context; compile it in the context "
                            "that holds its buffers (backend " + std::string(backend_name()) + ")");
  check_static_values(data, static_values);
  check_inputs_initialized(*state_, data);
  check_dependencies_ran(*state_, data);
  std::vector<backends::Buffer*> buffers;
  buffers.reserve(data.params.size());
  for (const auto& node : data.params) buffers.push_back(&state_->ensure_buffer(node));
  if (data.packing) {
    // The packing reads its sources on the host's side of the queue: what was queued first must
    // have finished (a no-op unless a source changed since the last packing).
    if (state_->queue && needs_refresh(*state_, *data.packing)) state_->wait_for_device();
    refresh_packing(*state_, *data.packing);
  }
  backends::Event done;
  if (state_->queue) {
    // The routine's handle keeps its executable alive until the task ran; the state outlives
    // its queue (~ContextState stops the queue first).
    std::vector<std::int64_t> statics(static_values.begin(), static_values.end());
    done = state_->queue->enqueue(
        [state = state_.get(), impl = routine.impl_, buffers = std::move(buffers), statics = std::move(statics)] {
          run_and_profile(*state, *impl, buffers, statics);
        });
  } else {
    logging::ScopedTimer timer("run " + data.name);
    try {
      run_and_profile(*state_, data, buffers, static_values);
    } catch (...) {
      // The run may have written part of its outputs (an earlier kernel ran, a later one
      // failed): they hold neither the old value nor the new one, as after a failed queued run
      // (ContextState::wait_for_device).
      for (const auto& node : data.outputs) state_->forget_value(node->id);
      throw;
    }
  }
  for (const auto& node : data.outputs) state_->mark_written(*node, ContextState::Writer::Routine, done);
  state_->routines_run.insert(data.id);
}

}  // namespace cannl::runtime
