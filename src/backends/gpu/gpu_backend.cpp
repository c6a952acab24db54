// The GPU backends (CUDA, HIP, OpenCL): the default GPU schedule, the final lowering round, kernel
// fission, one module of kernels per routine printed by the GPU dialect, compiled and cached by
// the device; the executables are gpu_executable.h.
#include <array>
#include <exception>

#include "backends/gpu/cuda_compile_check.h"
#include "backends/gpu/hip_compile_check.h"
#include "backends/gpu/cuda_device.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/gpu_executable.h"
#include "backends/gpu/hip_device.h"
#include "backends/index_precision.h"
#include "cannl/backends/backend.h"
#include "cannl/backends/multi_device.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/kernel_census.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"

namespace cannl::backends {

namespace {

// `b` with the five keys (for bm, bn, bk, tm, tn) that are set (not 0) in place of its fields.
ir::TileBlocking with_keys(ir::TileBlocking b, const std::array<const char*, 5>& keys) {
  int* const fields[5] = {&b.bm, &b.bn, &b.bk, &b.tm, &b.tn};
  for (std::size_t f = 0; f < keys.size(); ++f)
    if (const std::int64_t v = config::get_int_in(keys[f], 0, 1 << 16); v > 0) *fields[f] = static_cast<int>(v);
  return b;
}

// The device's default matmul blocking with the `gpu_tile_*` keys that are set (not 0) in place
// of its fields; ConfigError when the result has no whole register tiles per block.
ir::TileBlocking configured_blocking(const ir::TileBlocking& device) {
  const ir::TileBlocking b = with_keys(device, {"gpu_tile_bm", "gpu_tile_bn", "gpu_tile_bk", "gpu_tile_tm", "gpu_tile_tn"});
  if (b == device) return b;
  if (!b.valid())
    throw ConfigError("gpu_tile_bm/bn/bk/tm/tn: " + std::to_string(b.bm) + " x " + std::to_string(b.bn) + " x " +
                      std::to_string(b.bk) + " cells per block with " + std::to_string(b.tm) + " x " +
                      std::to_string(b.tn) + " per thread: every size must be positive and tm (tn) divide bm (bn)");
  return b;
}

// The device's tensor-core blocking sizes with the `gpu_mma_*` keys that are set in place of
// theirs; ConfigError when they do not make whole MMA tiles per warp.
ir::TileBlocking configured_mma_blocking(const ir::TileBlocking& device) {
  const ir::TileBlocking b = with_keys(device, {"gpu_mma_bm", "gpu_mma_bn", "gpu_mma_bk", "gpu_mma_wm", "gpu_mma_wn"});
  if (b == device) return b;
  ir::TileBlocking as_bf16 = b;
  as_bf16.mma = ir::NarrowFormat::BF16;  // the strictest: 16-step slices
  if (!as_bf16.valid())
    throw ConfigError("gpu_mma_bm/bn/bk/wm/wn: " + std::to_string(b.bm) + " x " + std::to_string(b.bn) + " x " +
                      std::to_string(b.bk) + " cells per block with " + std::to_string(b.tm) + " x " +
                      std::to_string(b.tn) + " per warp: wm (wn) must be a multiple of 16 dividing bm (bn), and "
                      "bk a multiple of 16");
  return b;
}

// The tensor-core formats a routine may use (config gpu_tensor_cores; the MMA re-associates, so
// only where gpu_schedule_reassociate allows it).
std::vector<ir::NarrowFormat> allowed_mma_formats(std::vector<ir::NarrowFormat> device_formats) {
  const std::string mode = config::get_one_of("gpu_tensor_cores", {"auto", "off"});
  if (mode == "off" || !config::get_bool("gpu_schedule_reassociate")) return {};
  return device_formats;
}

// Whether a routine may pipeline its tiles' staging on a device with asynchronous copies
// (config gpu_async_copy).
bool allowed_async_copy(bool device_copies_async) {
  const std::string mode = config::get_one_of("gpu_async_copy", {"auto", "off"});
  return device_copies_async && mode == "auto";
}

std::vector<codegen::KernelBody> kernel_bodies(const std::vector<schedule::Segment>& segments) {
  std::vector<codegen::KernelBody> bodies;
  for (const auto& s : segments)
    if (s.kind == schedule::Segment::Kind::Kernel) bodies.push_back({s.body, s.geometry});
  return bodies;
}

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
    return configured_gpu_target(target_, device_->mma_formats(), device_->async_copy());
  }

  ir::LoweredRoutine default_schedule(const ir::LoweredRoutine& routine) const override {
    return default_schedule_for(routine, target());
  }
  ir::LoweredRoutine default_schedule_for(const ir::LoweredRoutine& routine, const ir::Target& target) const override {
    return automatic_gpu_schedule(routine, target);
  }

  const std::shared_ptr<gpu::Device>& device() const { return device_; }

  std::unique_ptr<Buffer> allocate(std::size_t bytes) override { return device_->allocate(bytes); }
  void synchronize() override { device_->synchronize(); }

  std::unique_ptr<Executable> compile(const CompileRequest& request) override {
    const ir::Target target = request.target.value_or(this->target());
    auto [lowered, segments] = gpu_launches(request.routine, target);
    if (logging::debug_level() >= 1)
      logging::info("kernel census of " + kernel_census_summary(schedule::kernel_census(segments, target.gpu), lowered.name));
    const std::vector<codegen::KernelBody> bodies = kernel_bodies(segments);
    codegen::GeneratedModule module = codegen::emit_gpu(language_, lowered, bodies, {.target = target});
    if (language_ == codegen::GpuLanguage::OpenCL) check_other_dialects(request.routine, lowered, bodies, target);
    const std::string extension = language_ == codegen::GpuLanguage::Cuda ? ".cu" : language_ == codegen::GpuLanguage::Hip ? ".hip" : ".cl";
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
    return std::make_unique<gpu::GpuExecutable>(device_, CompileRequest{lowered, request.params}, std::move(segments),
                                           std::move(module), std::move(loaded), readable.filename().string());
  }

 private:
  // cuda_compile_check and hip_compile_check of an OpenCL compile: the CUDA and HIP forms of
  // `lowered` (the final lowering of `scheduled` for `target`), each as its devices would run it.
  static void check_other_dialects(const ir::LoweredRoutine& scheduled, const ir::LoweredRoutine& lowered,
                                   const std::vector<codegen::KernelBody>& bodies, const ir::Target& target) {
    gpu::check_cuda_compiles(lowered, bodies, target);
    if (target.gpu_mma_formats.empty()) {
      // The tensor-core form of the routine's tiles that a CUDA device would run.
      ir::Target cuda = target;
      cuda.gpu.warp_size = ir::TileBlocking::kWarpLanes;
      cuda.gpu_mma_formats = allowed_mma_formats(gpu::cuda_mma_formats(config::get("cuda_compile_check")));
      gpu::check_cuda_tensor_core_compiles(scheduled, cuda);
      if (!target.gpu_async_copy) {
        gpu::write_hip_check_modules(lowered, bodies, target);
        return;
      }
    }
    // HIP renders no tensor cores and no asynchronous copies: the form a HIP device would run.
    ir::Target hip = target;
    hip.gpu_mma_formats.clear();
    hip.gpu_async_copy = false;
    const ir::LoweredRoutine scalar = schedule::lower_for_target(scheduled, hip);
    gpu::write_hip_check_modules(scalar, kernel_bodies(schedule::fission(scalar, hip, config::get_bool("schedule_fission"))),
                                 hip);
  }

  std::shared_ptr<gpu::Device> device_;
  codegen::GpuLanguage language_;
  ir::Target target_;
};

}  // namespace

ir::Target configured_gpu_target(ir::Target device_target, std::vector<ir::NarrowFormat> device_mma_formats,
                                 bool device_copies_async) {
  ir::Target t = std::move(device_target);
  t.index_dtype = configured_index_dtype(t.index_dtype);
  t.gpu_tile = configured_blocking(t.gpu_tile);
  t.gpu_mma_formats = allowed_mma_formats(std::move(device_mma_formats));
  t.gpu_mma_tile = configured_mma_blocking(t.gpu_mma_tile);
  t.gpu_async_copy = allowed_async_copy(device_copies_async);
  return t;
}

ir::LoweredRoutine automatic_gpu_schedule(const ir::LoweredRoutine& routine, const ir::Target& target) {
  if (!config::get_bool("automatic_gpu_schedule")) return routine;
  return schedule::default_gpu_schedule(routine, schedule::GpuScheduleOptions::from_config(target));
}

GpuLaunches gpu_launches(const ir::LoweredRoutine& scheduled, const ir::Target& target) {
  ir::LoweredRoutine lowered = schedule::lower_for_target(scheduled, target);
  std::vector<schedule::Segment> segments = schedule::fission(lowered, target, config::get_bool("schedule_fission"));
  return {std::move(lowered), std::move(segments)};
}

std::shared_ptr<Backend> make_gpu_backend(std::shared_ptr<gpu::Device> device, codegen::GpuLanguage language) {
  return std::make_shared<GpuBackend>(std::move(device), language);
}

const std::shared_ptr<gpu::Device>* gpu_device_of(const Backend& backend) {
  const auto* gpu = dynamic_cast<const GpuBackend*>(&backend);
  return gpu == nullptr ? nullptr : &gpu->device();
}

bool copy_between_devices(Backend& dst_backend, Buffer& dst, Backend& src_backend, const Buffer& src) {
  const auto* to = gpu_device_of(dst_backend);
  const auto* from = gpu_device_of(src_backend);
  if (to == nullptr || from == nullptr) return false;
  return gpu::cuda_peer_copy(**to, dst, **from, src) || gpu::hip_peer_copy(**to, dst, **from, src);
}

std::shared_ptr<Backend> make_cuda_backend(int ordinal) {
  return std::make_shared<GpuBackend>(gpu::open_cuda(ordinal), codegen::GpuLanguage::Cuda);
}

std::shared_ptr<Backend> make_cuda_cpu_backend() {
  return std::make_shared<GpuBackend>(gpu::open_cuda_on_cpu(), codegen::GpuLanguage::Cuda);
}

std::shared_ptr<Backend> make_hip_backend(int ordinal) {
  const auto fifo = static_cast<std::size_t>(config::get_int_in("hip_printf_fifo_size", 0, 1LL << 32));
  return std::make_shared<GpuBackend>(gpu::open_hip(ordinal, fifo), codegen::GpuLanguage::Hip);
}

std::shared_ptr<Backend> make_opencl_backend(int platform, int device) {
  return std::make_shared<GpuBackend>(gpu::open_opencl(platform, device), codegen::GpuLanguage::OpenCL);
}

}  // namespace cannl::backends
