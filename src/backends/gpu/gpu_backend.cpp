// The GPU backends (CUDA, OpenCL): the default GPU schedule, the final lowering round, kernel
// fission, one module of kernels per routine printed by the GPU dialect, compiled and cached by
// the device, and executables that enqueue the kernels in order on the device's queue.
#include <algorithm>
#include <exception>
#include <map>

#include "backends/gpu/cuda_compile_check.h"
#include "backends/gpu/device.h"
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

class GpuExecutable final : public Executable {
 public:
  GpuExecutable(std::shared_ptr<gpu::Device> device, CompileRequest request, std::vector<schedule::Segment> segments,
                codegen::GeneratedModule module, std::shared_ptr<gpu::Module> loaded)
      : device_(std::move(device)), request_(std::move(request)), segments_(std::move(segments)),
        module_(std::move(module)), loaded_(std::move(loaded)) {
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
      device_->launch(*loaded_, kernel, segment.geometry, args);
      ++kernel;
    }
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
  ir::Target target() const override { return target_; }

  ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const override {
    if (!config::get_bool("automatic_gpu_schedule")) return routine;
    return schedule::default_gpu_schedule(routine, {.target = target_,
                                                    .block_size = config::get_int_in("gpu_schedule_block_size", 1, 1 << 20),
                                                    .min_parallel = config::get_int_in("gpu_schedule_min_parallel", 1, 1LL << 40),
                                                    .reassociate = config::get_bool("gpu_schedule_reassociate")});
  }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return device_->allocate(bytes); }
  void synchronize() override { device_->synchronize(); }

  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    const ir::LoweredRoutine lowered = schedule::lower_for_target(request.routine, target_);
    std::vector<schedule::Segment> segments =
        schedule::fission(lowered, target_, config::get_bool("schedule_fission"));
    std::vector<codegen::KernelBody> bodies;
    for (const auto& s : segments) {
      if (s.kind == schedule::Segment::Kind::Kernel) bodies.push_back({s.body, s.geometry});
    }
    codegen::GeneratedModule module = codegen::emit_gpu(language_, lowered, bodies, {.target = target_});
    if (language_ == codegen::GpuLanguage::OpenCL) gpu::check_cuda_compiles(lowered, bodies, target_);
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
                                           std::move(module), std::move(loaded));
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
