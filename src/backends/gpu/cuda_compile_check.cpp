// Config key `cuda_compile_check` (cuda_compile_check.h).
#include "backends/gpu/cuda_compile_check.h"

#include <atomic>
#include <mutex>
#include <string>

#include "backends/gpu/device.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

std::atomic<std::int64_t> g_modules{0}, g_kernels{0};
std::mutex g_mutex;
std::string g_unavailable;  // why NVRTC could not be used, once it failed to load

}  // namespace

namespace {

// Whether a tile of `s` (a top-level statement, or the body of Grid loops) runs on tensor cores.
bool has_tensor_core_tile(const ir::StmtRef& s) {
  for (const ir::StmtRef& x : ir::flatten_seq(s)) {
    if (const auto* f = std::get_if<ir::For>(&x->node); f != nullptr && has_tensor_core_tile(f->body)) return true;
    if (const auto* t = std::get_if<ir::TileMma>(&x->node); t != nullptr && t->blocking.tensor_cores()) return true;
  }
  return false;
}

// Whether some tile of `s` reads two operands promised exact in one format: only then can
// the final lowering round put it on tensor cores (the cheap test before lowering again).
bool has_rounded_operand_tile(const ir::StmtRef& s) {
  bool found = false;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    const auto* t = std::get_if<ir::TileMma>(&x.node);
    found = found || (t != nullptr && t->a.node->rounded_to != ir::NarrowFormat::None &&
                      t->a.node->rounded_to == t->b.node->rounded_to);
  });
  return found;
}

void check_for(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
               const ir::Target& target, const std::string& arch);

// The shared memory a CUDA kernel may declare statically.
constexpr std::int64_t kCudaStaticSharedBytes = 48 * 1024;

// The blocked tiles of a routine with their staging pipelined as `target` allows
// (ir::pipelined_blocking).
struct PipelineTiles : ir::TreeMapper {
  const ir::Target& target;
  explicit PipelineTiles(const ir::Target& t) : target(t) {}
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const auto* t = std::get_if<ir::TileMma>(&s->node);
    if (t == nullptr) return map_children(s);
    if (!t->blocking.blocked() || t->blocking.async_copy) return s;
    ir::TileMma out = *t;
    out.blocking = ir::pipelined_blocking(t->blocking, target);
    return out.blocking.async_copy ? ir::tile_mma(std::move(out)) : s;
  }
};

}  // namespace

CudaForm cuda_form(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                   const ir::Target& target, const std::string& arch) {
  CudaForm form{routine, kernels, target};
  // A CUDA device's warps (the OpenCL device's may be 1): block reductions end in warp shuffles.
  form.target.gpu.warp_size = ir::TileBlocking::kWarpLanes;
  if (target.gpu_async_copy || !cuda_async_copy(arch) || config::get_one_of("gpu_async_copy", {"auto", "off"}) != "auto") return form;
  form.target.gpu_async_copy = true;
  // Both stages within what a CUDA block declares statically (48 KB), whatever the OpenCL
  // device holds: ptxas refuses more.
  if (form.target.gpu.max_shared_bytes <= 0 || form.target.gpu.max_shared_bytes > kCudaStaticSharedBytes)
    form.target.gpu.max_shared_bytes = kCudaStaticSharedBytes;
  PipelineTiles mapper(form.target);
  form.routine.body = mapper.map_stmt(routine.body);
  for (auto& k : form.kernels) k.body = mapper.map_stmt(k.body);
  return form;
}

void check_cuda_compiles(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                         const ir::Target& target) {
  const std::string arch = config::get("cuda_compile_check");
  if (arch.empty() || arch == "off") return;
  const CudaForm form = cuda_form(routine, kernels, target, arch);
  check_for(form.routine, form.kernels, form.target, arch);
  // mma.sync and ldmatrix exist from sm_80 on: tensor-core kernels are checked there too (the
  // pipelined scalar tiles, in nearly every routine with a matmul, by a test of their own).
  if (arch != "sm_80" && has_tensor_core_tile(routine.body)) check_for(form.routine, form.kernels, form.target, "sm_80");
}

void check_cuda_tensor_core_compiles(const ir::LoweredRoutine& scheduled, const ir::Target& cuda) {
  const std::string arch = config::get("cuda_compile_check");
  if (arch.empty() || arch == "off" || cuda.gpu_mma_formats.empty() || !has_rounded_operand_tile(scheduled.body)) return;
  const ir::LoweredRoutine lowered = schedule::lower_for_target(scheduled, cuda);
  if (!has_tensor_core_tile(lowered.body)) return;
  std::vector<codegen::KernelBody> bodies;
  for (const auto& s : schedule::fission(lowered, cuda, config::get_bool("schedule_fission")))
    if (s.kind == schedule::Segment::Kind::Kernel) bodies.push_back({s.body, s.geometry});
  check_cuda_compiles(lowered, bodies, cuda);
}

namespace {

void check_for(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
               const ir::Target& target, const std::string& arch) {
  const codegen::GeneratedModule cuda = codegen::emit_gpu(codegen::GpuLanguage::Cuda, routine, kernels, {.target = target});
  if (logging::debug_level() >= 2) files::write_atomically(files::build_dir() / (routine.name + ".check.cu"), cuda.text);
  {
    const std::lock_guard lock(g_mutex);
    if (!g_unavailable.empty()) return;
  }
  try {
    (void)nvrtc_compile(cuda.text, arch);
  } catch (const BackendUnavailable& e) {
    // A machine without the CUDA toolkit checks nothing, and says so once.
    const std::lock_guard lock(g_mutex);
    if (g_unavailable.empty()) logging::warn(std::string("cuda_compile_check: ") + e.what() + "; no CUDA kernel is checked");
    g_unavailable = e.what();
    return;
  } catch (const CompileError& e) {
    throw CompileError("cuda_compile_check: NVRTC rejected the CUDA form of routine " + routine.name + " for " +
                       arch + ":\n" + e.what() + "\n--- source ---\n" + cuda.text);
  }
  g_modules += 1;
  g_kernels += static_cast<std::int64_t>(kernels.size());
}

}  // namespace

CudaCompileChecks cuda_compile_checks() {
  const std::lock_guard lock(g_mutex);
  return {g_modules.load(), g_kernels.load(), g_unavailable};
}

}  // namespace cannl::backends::gpu
