// Config key `hip_compile_check` (hip_compile_check.h).
#include "backends/gpu/hip_compile_check.h"

#include <algorithm>
#include <chrono>
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

std::int64_t count_kernels(const std::string& text) {
  std::int64_t n = 0;
  for (std::size_t at = text.find("extern \"C\" __global__"); at != std::string::npos;
       at = text.find("extern \"C\" __global__", at + 1))
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

HipCompileChecks compile_hip_check_modules(const fs::path& dir) {
  std::vector<fs::path> modules;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (entry.is_regular_file() && entry.path().extension() == ".hip") modules.push_back(entry.path());
  std::sort(modules.begin(), modules.end());
  HipCompileChecks out;
  for (const fs::path& file : modules) {
    const std::string name = file.filename().string();
    const std::string arch = name.substr(0, name.find('-'));
    const std::string text = files::read_file(file);
    const auto start = std::chrono::steady_clock::now();
    try {
      (void)hiprtc_compile_program(text, hiprtc_options(arch), name);
    } catch (const CompileError& e) {
      throw CompileError("hip_compile_check: hiprtc rejected " + file.string() + " for " + arch + ":\n" + e.what());
    }
    out.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.modules += 1;
    out.kernels += count_kernels(text);
    if (std::find(out.architectures.begin(), out.architectures.end(), arch) == out.architectures.end())
      out.architectures.push_back(arch);
    fs::remove(file, error);
  }
  return out;
}

}  // namespace cannl::backends::gpu
