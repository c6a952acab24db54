// Config key `hip_compile_check` (hip_compile_check.h).
#include "backends/gpu/hip_compile_check.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "backends/gpu/hiprtc_api.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/hash.h"

namespace cannl::backends::gpu {

namespace fs = std::filesystem;

namespace {

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

// Modules compiled in one hiprtc program: its fixed cost (the runtime headers, the compiler's
// start) is most of a small module's, and the check compiles hundreds of them.
constexpr std::size_t kBatch = 64;

constexpr const char* kKernelHead = "extern \"C\" __global__";

// `modules` as one source: each in a namespace of its own, its kernels with C++ linkage (their
// names repeat across modules; `extern "C"` would make them one symbol). The texts are otherwise
// unchanged: their guarded macros and the typedefs agree between modules.
std::string batched(const std::vector<std::string>& modules) {
  std::string out;
  for (std::size_t k = 0; k < modules.size(); ++k) {
    std::string text = modules[k];
    for (std::size_t at = text.find(kKernelHead); at != std::string::npos; at = text.find(kKernelHead, at))
      text.replace(at, std::string(kKernelHead).size(), "__global__");
    const std::string ns = "cannl_check_" + std::to_string(k);
    out += "namespace " + ns + " {\n" + text + "\n}  // namespace " + ns + "\n";
  }
  return out;
}

std::int64_t count_kernels(const std::string& text) {
  std::int64_t n = 0;
  for (std::size_t at = text.find(kKernelHead); at != std::string::npos; at = text.find(kKernelHead, at + 1))
    ++n;
  return n;
}

}  // namespace

int hip_wave_size(const std::string& arch) {
  for (const char* rdna : {"gfx10", "gfx11", "gfx12"})
    if (arch.rfind(rdna, 0) == 0) return 32;
  return 64;
}

fs::path hip_check_dir() { return files::build_dir() / "hip_compile_check"; }

void write_hip_check_modules(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                             const ir::Target& target) {
  const std::string value = config::get("hip_compile_check");
  if (value.empty()) return;
  for (const std::string& arch : architectures(value)) {
    ir::Target wave_target = target;
    wave_target.gpu.warp_size = hip_wave_size(arch);
    const std::string text =
        codegen::emit_gpu(codegen::GpuLanguage::Hip, routine, kernels, {.target = wave_target}).text;
    const fs::path dir = hip_check_dir();
    const fs::path file = dir / (arch + "-" + sha256_hex(text).substr(0, 20) + ".hip");
    if (fs::exists(file)) continue;
    fs::create_directories(dir);
    files::write_atomically(file, text);
  }
}

HipCompileChecks compile_hip_check_modules(const fs::path& dir, const std::string& only_arch) {
  // Modules by architecture, in name order.
  std::map<std::string, std::vector<fs::path>> by_arch;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".hip" || name.find('-') == std::string::npos) continue;
    const std::string arch = name.substr(0, name.find('-'));
    if (only_arch.empty() || arch == only_arch) by_arch[arch].push_back(entry.path());
  }
  HipCompileChecks out;
  for (auto& [arch, modules] : by_arch) {
    std::sort(modules.begin(), modules.end());
    out.architectures.push_back(arch);
    for (std::size_t first = 0; first < modules.size(); first += kBatch) {
      const std::vector<fs::path> batch(modules.begin() + static_cast<std::ptrdiff_t>(first),
                                        modules.begin() + static_cast<std::ptrdiff_t>(std::min(first + kBatch, modules.size())));
      std::vector<std::string> texts;
      for (const auto& file : batch) texts.push_back(files::read_file(file));
      const auto start = std::chrono::steady_clock::now();
      try {
        (void)hiprtc_compile_program(batched(texts), hiprtc_options(arch), arch + "-batch.hip");
      } catch (const CompileError&) {
        // Find the module at fault, alone, so that the message names it and shows its own log.
        for (std::size_t k = 0; k < batch.size(); ++k) {
          try {
            (void)hiprtc_compile_program(texts[k], hiprtc_options(arch), batch[k].filename().string());
          } catch (const CompileError& e) {
            throw CompileError("hip_compile_check: hiprtc rejected " + batch[k].string() + " for " + arch + ":\n" +
                               e.what());
          }
        }
        throw;  // the modules compile alone but not together: a fault of the batching itself
      }
      out.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (std::size_t k = 0; k < batch.size(); ++k) {
        out.modules += 1;
        out.kernels += count_kernels(texts[k]);
        fs::remove(batch[k], error);
      }
    }
  }
  return out;
}

}  // namespace cannl::backends::gpu
