// GPU executables (gpu_executable.h).
#include "backends/gpu/gpu_executable.h"

#include <algorithm>

#include "backends/run_arguments.h"
#include "cannl/support/config.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

// Kernel timing (config `profile_kernels`, or debug >= 2), as on the C backend.
bool profile_kernels() { return config::get_bool("profile_kernels") || logging::debug_level() >= 2; }

// The comment of the first store under `s` (names the assignment a kernel computes), or "".
std::string first_store_comment(const ir::StmtRef& s) {
  if (const auto* set = std::get_if<ir::Set>(&s->node)) return set->comment;
  if (const auto* f = std::get_if<ir::For>(&s->node)) return first_store_comment(f->body);
  if (const auto* i = std::get_if<ir::If>(&s->node)) return first_store_comment(i->body);
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    for (const auto& c : q->stmts) {
      if (std::string text = first_store_comment(c); !text.empty()) return text;
    }
  }
  return "";
}

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
  // Nodes the routine touches that are no parameter are its Local arrays.
  for (const auto& node : ir::nodes_of(request_.routine.body)) {
    const bool is_param = std::any_of(request_.params.begin(), request_.params.end(),
                                      [&](const ir::NodeRef& p) { return p->id == node->id; });
    if (!is_param) scratch_.emplace(node->id, device_->allocate(node->size_in_bytes()));
  }
  std::size_t kernel = 0;
  for (const auto& s : segments_) {
    if (s.kind != schedule::Segment::Kind::Kernel) continue;
    const std::string& name = module_.kernels[kernel++].name;
    const std::string label = name + " (" + std::to_string(s.geometry.blocks()) + " x " +
                              std::to_string(s.geometry.threads_per_block()) + " threads): " +
                              first_store_comment(s.body);
    timings_.push_back({label, file, line_of(module_.text, " " + name + "("), 0, 0});
  }
}

void GpuExecutable::run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) {
  check_run_arguments(request_, buffers, static_values);
  std::map<int, Buffer*> bound;
  for (std::size_t k = 0; k < buffers.size(); ++k) bound[request_.params[k]->id] = buffers[k];
  for (auto& [id, buffer] : scratch_) {
    device_->fill_zero(*buffer);  // like the C backend's local arrays
    bound[id] = buffer.get();
  }
  std::size_t kernel = 0;
  for (const auto& segment : segments_) {
    if (segment.kind == schedule::Segment::Kind::Zero) {
      device_->fill_zero(*bound.at(segment.zeroed->id));
      continue;
    }
    std::vector<KernelArg> args;
    for (const auto& node : module_.kernels[kernel].params) args.emplace_back(bound.at(node->id));
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
