// GPU executables (gpu_executable.h).
#include "backends/gpu/gpu_executable.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <set>

#include "backends/run_arguments.h"
#include "cannl/ir/rewrite.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
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

std::atomic<std::size_t> g_graphs_built{0};

// Per static value of `routine`, whether `body` reads it.
std::vector<bool> statics_read_by(const ir::StmtRef& body, const ir::LoweredRoutine& routine) {
  const std::set<ir::Symbol> used = ir::free_symbols(body);
  std::vector<bool> reads;
  for (const auto& s : routine.statics) reads.push_back(used.contains(s.symbol));
  return reads;
}

}  // namespace

std::size_t graphs_built() { return g_graphs_built.load(); }

bool gpu_graphs_enabled() {
  return config::get_one_of("gpu_graphs", {"auto", "off"}) == "auto";
}

GpuExecutable::GpuExecutable(std::shared_ptr<Device> device, CompileRequest request,
                             std::vector<schedule::Segment> segments, codegen::GeneratedModule module,
                             std::shared_ptr<Module> loaded, const std::string& file)
    : device_(std::move(device)), request_(std::move(request)), segments_(std::move(segments)),
      module_(std::move(module)), loaded_(std::move(loaded)), profiled_(profile_kernels()),
      use_graphs_(gpu_graphs_enabled() && !profiled_ && device_->has_graphs()) {
  // Buffer slots: the parameters in order, then the routine's Local arrays (the nodes it touches
  // that are no parameter), which get device scratch memory of their own.
  std::map<int, std::size_t> slot_of;
  for (std::size_t k = 0; k < request_.params.size(); ++k) slot_of.emplace(request_.params[k]->id, k);
  const std::size_t statics = request_.routine.statics.size();
  std::vector<LaunchStep> segment_launches;
  std::vector<Binding> segment_bindings;
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
    LaunchStep launch;
    Binding binding;
    if (s.kind == schedule::Segment::Kind::Zero) {
      binding.slots = {slot_of.at(s.zeroed->id)};
      launch.args.resize(1);
    } else {
      const codegen::PrintedKernel& printed = module_.kernels[timings_.size()];
      for (const auto& node : printed.params) binding.slots.push_back(slot_of.at(node->id));
      binding.reads_static = statics_read_by(s.body, request_.routine);
      launch.kernel = timings_.size();
      launch.geometry = s.geometry;
      launch.args.resize(binding.slots.size() + statics);
      const std::string& name = printed.name;
      const std::string label = name + " (" + std::to_string(s.geometry.blocks()) + " x " +
                                std::to_string(s.geometry.threads_per_block()) + " threads): " + printed.label;
      timings_.push_back({label, file, line_of(module_.text, " " + name + "("), 0, 0});
    }
    segment_launches.push_back(std::move(launch));
    segment_bindings.push_back(std::move(binding));
  }
  for (std::size_t k = 0; k < scratch_.size(); ++k) {
    if (!scratch_[k].zero_each_run) continue;
    LaunchStep fill;
    fill.args.resize(1);
    launches_.push_back(std::move(fill));
    bindings_.push_back({.slots = {request_.params.size() + k}, .reads_static = {}});
  }
  std::move(segment_launches.begin(), segment_launches.end(), std::back_inserter(launches_));
  std::move(segment_bindings.begin(), segment_bindings.end(), std::back_inserter(bindings_));
  use_graphs_ = use_graphs_ && !launches_.empty();
}

Buffer& GpuExecutable::buffer(std::span<Buffer* const> buffers, std::size_t slot) const {
  return slot < buffers.size() ? *buffers[slot] : *scratch_[slot - buffers.size()].buffer;
}

void GpuExecutable::bind(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) {
  for (std::size_t step = 0; step < launches_.size(); ++step) {
    const Binding& binding = bindings_[step];
    std::vector<KernelArg>& args = launches_[step].args;
    for (std::size_t k = 0; k < binding.slots.size(); ++k) args[k] = &buffer(buffers, binding.slots[k]);
    for (std::size_t k = 0; k < binding.reads_static.size(); ++k)
      args[binding.slots.size() + k] = binding.reads_static[k] ? static_values[k] : std::int64_t{0};
  }
}

void GpuExecutable::run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) {
  check_run_arguments(request_, buffers, static_values);
  bind(buffers, static_values);
  const auto current = device_->stay_current();  // one context switch for the run's launches
  if (use_graphs_ && replay(buffers, static_values)) return;
  launch_one_by_one(buffers);
}

void GpuExecutable::launch_one_by_one(std::span<Buffer* const> buffers) {
  for (std::size_t step = 0; step < launches_.size(); ++step) {
    const LaunchStep& launch = launches_[step];
    if (launch.kernel == LaunchStep::kZeroFill) {
      device_->fill_zero(buffer(buffers, bindings_[step].slots[0]));
      continue;
    }
    std::unique_ptr<Event> start = profiled_ ? device_->record(true) : nullptr;
    device_->launch(*loaded_, launch.kernel, launch.geometry, launch.args);
    if (profiled_) pending_.push_back({launch.kernel, std::move(start), device_->record(true)});
  }
}

bool GpuExecutable::replay(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) {
  run_buffers_.clear();
  for (const Buffer* b : buffers) run_buffers_.push_back(device_->graph_key(*b));
  if (graph_ != nullptr && run_buffers_ != graph_buffers_) {
    // Built for other buffers. One launched only once before they changed again saved nothing:
    // buffers that change at every run give graphs up.
    rebuilds_in_a_row_ = graph_launches_ <= 1 ? rebuilds_in_a_row_ + 1 : 0;
    graph_.reset();
    if (rebuilds_in_a_row_ == kMaxRebuildsInARow) {
      give_up_graphs("its buffers changed at each of its last " + std::to_string(kMaxRebuildsInARow + 1) + " runs");
      return false;
    }
  }
  if (graph_ != nullptr && !std::equal(static_values.begin(), static_values.end(), graph_statics_.begin())) {
    // Only the kernels that read a static value that changed have other arguments.
    for (std::size_t k = 0; k < launches_.size() && graph_ != nullptr; ++k) {
      const std::vector<bool>& reads = bindings_[k].reads_static;
      bool changed = false;
      for (std::size_t s = 0; s < reads.size(); ++s) changed = changed || (reads[s] && static_values[s] != graph_statics_[s]);
      std::string why;
      if (changed && !graph_->set_args(k, launches_[k].args, why)) {
        logging::warn("routine " + request_.routine.name + ": updating its graph failed (" + why + "); building it again");
        graph_.reset();
      }
    }
    graph_statics_.assign(static_values.begin(), static_values.end());
  }
  if (graph_ == nullptr) {
    std::string why;
    graph_ = device_->build_graph(*loaded_, launches_, "the graph of " + request_.routine.name + " (" +
                                  std::to_string(timings_.size()) + " kernels)", why);
    if (graph_ == nullptr) {
      give_up_graphs(why);
      return false;
    }
    ++graph_builds_;
    ++g_graphs_built;
    graph_launches_ = 0;
    graph_buffers_ = run_buffers_;
    graph_statics_.assign(static_values.begin(), static_values.end());
  }
  graph_->launch();
  ++graph_launches_;
  return true;
}

void GpuExecutable::give_up_graphs(const std::string& why) {
  use_graphs_ = false;
  logging::warn("routine " + request_.routine.name + ": no " + std::string(device_->api()) + " graph (" + why +
                "); its kernels launch one by one");
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
