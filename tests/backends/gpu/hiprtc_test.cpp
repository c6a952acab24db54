// hiprtc alone (no GPU, no driver): HIP source compiles to an AMDGPU code object for gfx90a
// (wave64, CDNA) and gfx1030 (wave32, RDNA) with cannl's options, and a source that does not
// compile is a CompileError with hiprtc's log. Skips, saying why, where hiprtc cannot be loaded.
//
// Each compile runs in a child process (a death test that re-executes this binary): hiprtc's
// comgr and PoCL's clang abort a process that loads both, and the OpenCL tests of this binary
// load PoCL. The child reports a failure on stderr and by its exit status.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "backends/gpu/device_checks.h"
#include "backends/gpu/hip_compile_check.h"
#include "backends/gpu/hiprtc_api.h"
#include "backends/run_util.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::hiprtc_compile_program;
using backends::gpu::hiprtc_options;

std::string hiprtc_or_reason(std::string& why) {
  try {
    return backends::gpu::hiprtc_version();
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return "";
  }
}

#define SKIP_WITHOUT_HIPRTC()                                       \
  do {                                                              \
    std::string why;                                                \
    if (hiprtc_or_reason(why).empty()) GTEST_SKIP() << why;         \
  } while (false)

// The EF_AMDGPU_MACH field of a code object's ELF header (e_flags & 0xff), or -1 when `code` is
// no AMDGPU ELF (e_machine 224).
int amdgpu_mach(const std::string& code) {
  if (code.size() < 64 || code.compare(0, 4, "\x7f" "ELF") != 0) return -1;
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(code[at]); };
  const unsigned machine = byte(18) | (byte(19) << 8);
  if (machine != 224) return -1;
  return static_cast<int>(byte(48));  // e_flags of a 64-bit ELF, low byte
}

// Runs `child` in a child process; it returns "" when its checks held, else what failed.
void in_child(const std::function<std::string()>& child) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::string failure;
        try {
          failure = child();
        } catch (const std::exception& e) {
          failure = std::string("threw: ") + e.what();
        }
        if (!failure.empty()) std::fprintf(stderr, "%s\n", failure.c_str());
        // _Exit: no exit-time leak check, which would report what ROCm's compiler keeps for the
        // life of the process (under ASan).
        std::fflush(nullptr);
        std::_Exit(failure.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Hiprtc, CompilesAKernelToACodeObjectForEachArchitecture) {
  SKIP_WITHOUT_HIPRTC();
  in_child([] {
    const int before = backends::gpu::hiprtc_compilations();
    // EF_AMDGPU_MACH_AMDGCN_GFX90A = 0x3f, _GFX1030 = 0x36.
    for (const auto& [arch, mach] : {std::pair{"gfx90a", 0x3f}, std::pair{"gfx1030", 0x36}}) {
      const auto out = hiprtc_compile_program(cuda_axpy_source(), hiprtc_options(arch), "axpy.hip");
      if (amdgpu_mach(out.code) != mach) return std::string(arch) + ": machine " + std::to_string(amdgpu_mach(out.code));
      if (out.code.find("axpy2d") == std::string::npos) return std::string(arch) + ": extern \"C\" lost the name";
    }
    if (backends::gpu::hiprtc_compilations() != before + 2) return std::string("two compilations not counted");
    return std::string();
  });
}

TEST(Hiprtc, OptionsDoNotContractMultiplyAndAdd) {
  // clang's HIP default fuses a*b+c (-ffp-contract=fast); the interpreter rounds twice.
  const auto options = hiprtc_options("gfx90a");
  EXPECT_NE(std::find(options.begin(), options.end(), "-ffp-contract=off"), options.end());
  EXPECT_NE(std::find(options.begin(), options.end(), "--offload-arch=gfx90a"), options.end());
  EXPECT_EQ(std::find(options.begin(), options.end(), "-ffast-math"), options.end());
}

TEST(Hiprtc, ACompileErrorCarriesHiprtcsLog) {
  SKIP_WITHOUT_HIPRTC();
  in_child([] {
    const std::string source = "extern \"C\" __global__ void broken(float* c) { c[0] = undeclared_name_xyz; }\n";
    try {
      hiprtc_compile_program(source, hiprtc_options("gfx90a"));
      return std::string("expected CompileError");
    } catch (const CompileError& e) {
      const std::string message = e.what();
      if (message.find("undeclared_name_xyz") == std::string::npos || message.find("--offload-arch=gfx90a") == std::string::npos)
        return "the log or the options are missing: " + message;
    }
    return std::string();
  });
}

TEST(Hiprtc, BesidePoclsClangItRefusesInsteadOfAborting) {
  SKIP_WITHOUT_HIPRTC();
  in_child([] {
    if (dlopen("libclang-cpp.so.15", RTLD_NOW | RTLD_GLOBAL) == nullptr) return std::string();  // nothing to refuse
    try {
      hiprtc_compile_program(cuda_axpy_source(), hiprtc_options("gfx90a"));
      return std::string("expected BackendUnavailable");
    } catch (const BackendUnavailable& e) {
      const std::string message = e.what();
      if (message.find("libclang-cpp.so.15") == std::string::npos) return "the library is not named: " + message;
    }
    return std::string();
  });
}

TEST(Hiprtc, CandidatesEndWithTheRuntimeThatHeldItUpToRocm52) {
  const auto names = backends::gpu::hiprtc_candidates();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "libhiprtc.so.6");
  EXPECT_NE(std::find(names.begin(), names.end(), "libamdhip64.so.5"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "/opt/rocm/lib/libhiprtc.so.6"), names.end());
}

TEST(HipCompileCheck, WritesEachArchitecturesFormOnceAndCompilesTheFolder) {
  // s[i] += x[i, r] reduced by 128 threads: the wave64 and wave32 forms differ.
  const ir::NodeRef x = ir::make_node("x", ir::DType::F32, {4, 128});
  const ir::NodeRef s = ir::make_node("s", ir::DType::F32, {4});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto at = [](ir::Symbol v) { return ir::AxisIndex::iterator(v); };
  const auto sum = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(s, {at(i)}), ir::get(x, {at(i), at(r)})});
  const auto body = ir::for_loop(
      i, 0, 4, ir::for_loop(r, 0, 128, ir::set(s, {at(i)}, sum), ir::AxisType::WorkgroupReduce), ir::AxisType::Grid);
  const ir::LoweredRoutine routine{"row_sums", body, {}};
  const ir::Target target = ir::generic_gpu_target({1024, {1024, 1024, 1024}, {2147483647, 65535, 65535}, 65536, 1});
  const fs::path dir = backends::gpu::hip_check_dir();
  fs::remove_all(dir);
  {
    test_util::ConfigGuard guard;
    config::set_override("hip_compile_check", "gfx90a, gfx1030");
    for (int twice = 0; twice < 2; ++twice)
      backends::gpu::write_hip_check_modules(routine, {{body, ir::kernel_geometry(body)}}, target);
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u) << "one file per architecture, written once";
  EXPECT_EQ(names[0].rfind("gfx1030-", 0), 0u) << names[0];
  EXPECT_EQ(names[1].rfind("gfx90a-", 0), 0u) << names[1];
  EXPECT_NE(files::read_file(dir / names[0]).find("for (int64_t i4 = 16; i4 > 0;"), std::string::npos);
  EXPECT_NE(files::read_file(dir / names[1]).find("for (int64_t i4 = 32; i4 > 0;"), std::string::npos);

  SKIP_WITHOUT_HIPRTC();
  in_child([dir] {
    const auto checks = backends::gpu::compile_hip_check_modules(dir);
    if (checks.modules != 2 || checks.kernels != 2) return "compiled " + std::to_string(checks.modules) + " modules";
    if (!fs::is_empty(dir)) return std::string("compiled modules were left in the folder");
    return std::string();
  });
}

TEST(HipCompileCheck, ARejectedModuleIsNamedAndKept) {
  SKIP_WITHOUT_HIPRTC();
  const fs::path dir = fresh_cache_dir("hip_check_rejected");
  fs::create_directories(dir);
  files::write_atomically(dir / "gfx90a-0123.hip", "extern \"C\" __global__ void k(float* a) { a[0] = nope; }\n");
  in_child([dir] {
    try {
      backends::gpu::compile_hip_check_modules(dir);
      return std::string("expected CompileError");
    } catch (const CompileError& e) {
      if (std::string(e.what()).find("gfx90a-0123.hip") == std::string::npos) return std::string("file not named");
    }
    return fs::exists(dir / "gfx90a-0123.hip") ? std::string() : std::string("the rejected module was removed");
  });
}

TEST(HipCompileCheck, WaveSizeFollowsTheArchitecture) {
  EXPECT_EQ(backends::gpu::hip_wave_size("gfx90a"), 64);
  EXPECT_EQ(backends::gpu::hip_wave_size("gfx942"), 64);
  EXPECT_EQ(backends::gpu::hip_wave_size("gfx906"), 64);
  EXPECT_EQ(backends::gpu::hip_wave_size("gfx1030"), 32);
  EXPECT_EQ(backends::gpu::hip_wave_size("gfx1100"), 32);
}

}  // namespace
}  // namespace cannl::test_gpu
