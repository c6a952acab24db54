// Config key `hip_compile_check` (hip_compile_check.h).
#include "backends/gpu/hip_compile_check.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "backends/gpu/hiprtc_api.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"
#include "cannl/support/log.h"

namespace cannl::backends::gpu {

namespace {

// One lock for the counts, the compiled set and hiprtc itself (serialized: its thread safety
// varies between ROCm releases).
std::mutex g_mutex;
HipCompileChecks g_checks;
std::set<std::string> g_compiled;  // digests of (architecture, module text)

std::vector<std::string> architectures(const std::string& value) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= value.size()) {
    const std::size_t comma = std::min(value.find(',', at), value.size());
    std::string arch = value.substr(at, comma - at);
    while (!arch.empty() && arch.front() == ' ') arch.erase(arch.begin());
    while (!arch.empty() && arch.back() == ' ') arch.pop_back();
    if (!arch.empty()) out.push_back(arch);
    at = comma + 1;
  }
  return out;
}

}  // namespace

int hip_wave_size(const std::string& arch) {
  for (const char* rdna : {"gfx10", "gfx11", "gfx12"})
    if (arch.rfind(rdna, 0) == 0) return 32;
  return 64;
}

void check_hip_compiles(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                        const ir::Target& target) {
  const std::string value = config::get("hip_compile_check");
  if (value.empty()) return;
  for (const std::string& arch : architectures(value)) {
    ir::Target wave_target = target;
    wave_target.gpu.warp_size = hip_wave_size(arch);
    const codegen::GeneratedModule hip =
        codegen::emit_gpu(codegen::GpuLanguage::Hip, routine, kernels, {.target = wave_target});
    if (logging::debug_level() >= 2)
      files::write_atomically(files::build_dir() / (routine.name + "." + arch + ".check.hip"), hip.text);
    const std::lock_guard lock(g_mutex);
    if (!g_checks.unavailable.empty()) return;
    if (!g_compiled.insert(sha256_hex(arch + "\n" + hip.text)).second) {
      ++g_checks.duplicates;
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      (void)hiprtc_compile_program(hip.text, hiprtc_options(arch), routine.name + ".hip");
    } catch (const BackendUnavailable& e) {
      // A machine without ROCm checks nothing, and says so once.
      logging::warn(std::string("hip_compile_check: ") + e.what() + "; no HIP kernel is checked");
      g_checks.unavailable = e.what();
      return;
    } catch (const CompileError& e) {
      throw CompileError("hip_compile_check: hiprtc rejected the HIP form of routine " + routine.name + " for " + arch +
                         ":\n" + e.what() + "\n--- source ---\n" + hip.text);
    }
    g_checks.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    g_checks.modules += 1;
    g_checks.kernels += static_cast<std::int64_t>(kernels.size());
  }
}

HipCompileChecks hip_compile_checks() {
  const std::lock_guard lock(g_mutex);
  return g_checks;
}

}  // namespace cannl::backends::gpu
