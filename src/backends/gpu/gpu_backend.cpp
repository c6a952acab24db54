// The GPU backends (CUDA, OpenCL): the default GPU schedule, the final lowering round, kernel
// fission, one module of kernels per routine printed by the GPU dialect, compiled and cached by
// the device, and executables that enqueue the kernels in order on the device's queue.
#include <algorithm>
#include <exception>
#include <map>

#include "backends/gpu/cuda_compile_check.h"
#include "backends/gpu/device.h"
#include "backends/index_precision.h"
#include "backends/run_arguments.h"
#include "cannl/backends/backend.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"

namespace cannl::backends {

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

class GpuExecutable final : public Executable {
 public:
  GpuExecutable(std::shared_ptr<gpu::Device> device, CompileRequest request, std::vector<schedule::Segment> segments,
                codegen::GeneratedModule module, std::shared_ptr<gpu::Module> loaded, const std::string& file)
      : device_(std::move(device)), request_(std::move(request)), segments_(std::move(segments)),
        module_(std::move(module)), loaded_(std::move(loaded)), profiled_(profile_kernels()) {
    std::size_t kernel = 0;
    for (const auto& s : segments_) {
      if (s.kind != schedule::Segment::Kind::Kernel) continue;
      const std::string& name = module_.kernels[kernel++].name;
      const auto& g = s.geometry;
      const std::string label = name + " (" + std::to_string(g.blocks()) + " x " +
                                std::to_string(g.threads_per_block()) + " threads): " + first_store_comment(s.body);
      timings_.push_back({label, file, line_of(module_.text, " " + name + "("), 0, 0});
    }
    // Nodes the routine touches that are no parameter are its Local arrays: device scratch
    // memory of this executable, zeroed before every run like the C backend's local arrays.
    for (const auto& node : ir::nodes_of(request_.routine.body)) {
      const bool is_param = std::any_of(request_.params.begin(), request_.params.end(),
                                        [&](const ir::NodeRef& p) { return p->id == node->id; });
      if (!is_param) scratch_.emplace(node->id, device_->allocate(node->size_in_bytes()));
    }
  }

  void run(std::span<Buffer* const> buffers, std::span<const std::int64_t> static_values) override {
    check_run_arguments(request_, buffers, static_values);
    std::map<int, Buffer*> bound;
    for (std::size_t k = 0; k < buffers.size(); ++k) bound[request_.params[k]->id] = buffers[k];
    for (auto& [id, buffer] : scratch_) {
      device_->fill_zero(*buffer);
      bound[id] = buffer.get();
    }
    std::size_t kernel = 0;
    for (const auto& segment : segments_) {
      if (segment.kind == schedule::Segment::Kind::Zero) {
        device_->fill_zero(*bound.at(segment.zeroed->id));
        continue;
      }
      std::vector<gpu::KernelArg> args;
      for (const auto& node : module_.kernels[kernel].params) args.emplace_back(bound.at(node->id));
      for (const std::int64_t v : static_values) args.emplace_back(v);
      std::unique_ptr<gpu::Event> start = profiled_ ? device_->record(true) : nullptr;
      device_->launch(*loaded_, kernel, segment.geometry, args);
      if (profiled_) pending_.push_back({kernel, std::move(start), device_->record(true)});
      ++kernel;
    }
  }

  std::vector<KernelTiming> kernel_timings() const override {
    // Events are read when the timings are asked for, so a profiled run still only enqueues.
    for (auto& p : pending_) {
      const double ms = p.end->milliseconds_since(*p.start);
      if (ms < 0) {  // a device that cannot time: no profile rather than zeros
        untimed_ = true;
        continue;
      }
      timings_[p.kernel].calls += 1;
      timings_[p.kernel].total_ns += static_cast<std::int64_t>(ms * 1e6);
    }
    pending_.clear();
    return profiled_ && !untimed_ ? timings_ : std::vector<KernelTiming>{};
  }

  const std::string& source() const override { return module_.text; }
  const ir::LoweredRoutine& routine() const override { return request_.routine; }

 private:
  std::shared_ptr<gpu::Device> device_;
  CompileRequest request_;
  std::vector<schedule::Segment> segments_;
  codegen::GeneratedModule module_;
  std::shared_ptr<gpu::Module> loaded_;
  std::map<int, std::unique_ptr<Buffer>> scratch_;
  // Kernel timing: events around each launch, resolved into timings_ when those are read.
  struct PendingTiming {
    std::size_t kernel;
    std::unique_ptr<gpu::Event> start, end;
  };
  bool profiled_;
  mutable bool untimed_ = false;
  mutable std::vector<KernelTiming> timings_;
  mutable std::vector<PendingTiming> pending_;
};

class GpuBackend final : public Backend {
 public:
  GpuBackend(std::shared_ptr<gpu::Device> device, codegen::GpuLanguage language)
      : device_(std::move(device)), language_(language), target_(ir::generic_gpu_target(device_->limits())) {
    target_.backend = std::string(device_->api());
  }

  std::string_view name() const override { return device_->api(); }
  // The device and its compiler: a schedule tuned for one GPU is no answer for another.
  std::string fingerprint() const override { return device_->description() + " | " + device_->cache_tag(); }
  ir::Target target() const override {
    ir::Target t = target_;
    t.index_dtype = configured_index_dtype(t.index_dtype);
    return t;
  }

  ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const override {
    if (!config::get_bool("automatic_gpu_schedule")) return routine;
    return schedule::default_gpu_schedule(routine, {.target = target(),
                                                    .block_size = config::get_int_in("gpu_schedule_block_size", 1, 1 << 20),
                                                    .min_parallel = config::get_int_in("gpu_schedule_min_parallel", 1, 1LL << 40)});
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return device_->allocate(bytes); }
  void synchronize() override { device_->synchronize(); }

  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    const ir::Target target = this->target();
    const ir::LoweredRoutine lowered = schedule::lower_for_target(request.routine, target);
    std::vector<schedule::Segment> segments =
        schedule::fission(lowered, target, config::get_bool("schedule_fission"));
    std::vector<codegen::KernelBody> bodies;
    for (const auto& s : segments) {
      if (s.kind == schedule::Segment::Kind::Kernel) bodies.push_back({s.body, s.geometry});
    }
    codegen::GeneratedModule module = codegen::emit_gpu(language_, lowered, bodies, {.target = target});
    if (language_ == codegen::GpuLanguage::OpenCL) gpu::check_cuda_compiles(lowered, bodies, target);
    const std::string extension = language_ == codegen::GpuLanguage::Cuda ? ".cu" : ".cl";
    const std::filesystem::path readable = files::build_dir() / (lowered.name + extension);
    try {
      files::write_atomically(readable, module.text);
    } catch (const std::exception& e) {
      // A read-only build_files/ must not stop a run whose modules are cached.
      logging::warn("could not write " + readable.string() + ": " + e.what());
    }
    std::vector<std::string> names;
    for (const auto& k : module.kernels) names.push_back(k.name);
    std::shared_ptr<gpu::Module> loaded;
    try {
      loaded = device_->load(module.text, names, files::build_dir() / "cache");
    } catch (const CompileError& e) {
      throw CompileError(std::string(e.what()) + "\n(source: " + readable.string() + ")");
    }
    return std::make_unique<GpuExecutable>(device_, CompileRequest{lowered, request.params}, std::move(segments),
                                           std::move(module), std::move(loaded), readable.filename().string());
  }

 private:
  std::shared_ptr<gpu::Device> device_;
  codegen::GpuLanguage language_;
  ir::Target target_;
};

}  // namespace

std::shared_ptr<Backend> make_cuda_backend(int ordinal) {
  return std::make_shared<GpuBackend>(gpu::open_cuda(ordinal), codegen::GpuLanguage::Cuda);
}

std::shared_ptr<Backend> make_opencl_backend(int platform, int device) {
  return std::make_shared<GpuBackend>(gpu::open_opencl(platform, device), codegen::GpuLanguage::OpenCL);
}

}  // namespace cannl::backends
