// GPU executables (gpu_executable.h).
#include "backends/gpu/gpu_executable.h"

#include <algorithm>
#include <map>

#include "backends/run_arguments.h"
#include "cannl/support/config.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

// Kernel timing (config `profile_kernels`, or debug >= 2), as on the C backend.
bool profile_kernels() { return config::get_bool("profile_kernels") || logging::debug_level() >= 2; }

// 1-based line of `needle` in `text`, or 0.
std::int64_t line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  return at == std::string::npos ? 0 : 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
}

}  // namespace

GpuExecutable::GpuExecutable(std::shared_ptr<Device> device, CompileRequest request,
                             std::vector<schedule::Segment> segments, codegen::GeneratedModule module,
                             std::shared_ptr<Module> loaded, const std::string& file)
    : device_(std::move(device)), request_(std::move(request)), segments_(std::move(segments)),
      module_(std::move(module)), loaded_(std::move(loaded)), profiled_(profile_kernels()) {
  // Buffer slots: the parameters in order, then the routine's Local arrays (the nodes it touches
  // that are no parameter), which get device scratch memory of their own.
  std::map<int, std::size_t> slot_of;
  for (std::size_t k = 0; k < request_.params.size(); ++k) slot_of.emplace(request_.params[k]->id, k);
  for (const auto& s : segments_) {
    const std::vector<ir::NodeRef> nodes =
        s.kind == schedule::Segment::Kind::Zero ? std::vector<ir::NodeRef>{s.zeroed} : ir::nodes_of(s.body);
    for (const auto& node : nodes) {
      if (!slot_of.contains(node->id)) {
        slot_of.emplace(node->id, request_.params.size() + scratch_.size());
        // Zeroed before every run, like the C backend's local arrays, unless its first use is a
        // memset anyway.
        scratch_.push_back({device_->allocate(node->size_in_bytes()), s.kind != schedule::Segment::Kind::Zero});
      }
    }
    if (s.kind == schedule::Segment::Kind::Zero) {
      launch_slots_.push_back({slot_of.at(s.zeroed->id)});
      continue;
    }
    const codegen::PrintedKernel& printed = module_.kernels[timings_.size()];
    std::vector<std::size_t> slots;
    for (const auto& node : printed.params) slots.push_back(slot_of.at(node->id));
    launch_slots_.push_back(std::move(slots));
    const std::string& name = printed.name;
    const std::string label = name + " (" + std::to_string(s.geometry.blocks()) + " x " +
                              std::to_string(s.geometry.threads_per_block()) + " threads): " + printed.label;
    timings_.push_back({label, file, line_of(module_.text, " " + name + "("), 0, 0});
  }
}

void GpuExecutable::run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) {
  check_run_arguments(request_, buffers, static_values);
  auto buffer = [&](std::size_t slot) -> Buffer& {
    return slot < buffers.size() ? *buffers[slot] : *scratch_[slot - buffers.size()].buffer;
  };
  for (auto& s : scratch_) {
    if (s.zero_each_run) device_->fill_zero(*s.buffer);
  }
  std::size_t kernel = 0;
  std::vector<KernelArg> args;
  for (std::size_t k = 0; k < segments_.size(); ++k) {
    const schedule::Segment& segment = segments_[k];
    if (segment.kind == schedule::Segment::Kind::Zero) {
      device_->fill_zero(buffer(launch_slots_[k][0]));
      continue;
    }
    args.clear();
    for (const std::size_t slot : launch_slots_[k]) args.emplace_back(&buffer(slot));
    for (const std::int64_t v : static_values) args.emplace_back(v);
    std::unique_ptr<Event> start = profiled_ ? device_->record(true) : nullptr;
    device_->launch(*loaded_, kernel, segment.geometry, args);
    if (profiled_) pending_.push_back({kernel, std::move(start), device_->record(true)});
    ++kernel;
  }
}

std::vector<KernelTiming> GpuExecutable::kernel_timings() const {
  for (auto& p : pending_) {
    const double ms = p.end->milliseconds_since(*p.start);
    if (ms < 0) {
      untimed_ = true;
      continue;
    }
    timings_[p.kernel].calls += 1;
    timings_[p.kernel].total_ns += static_cast<std::int64_t>(ms * 1e6);
  }
  pending_.clear();
  return profiled_ && !untimed_ ? timings_ : std::vector<KernelTiming>{};
}

}  // namespace cannl::backends::gpu
