// hiprtc alone (no GPU, no driver): HIP source compiles to an AMDGPU code object for gfx90a
// (wave64, CDNA) and gfx1030 (wave32, RDNA) with cannl's options, and a source that does not
// compile is a CompileError with hiprtc's log. Skips, saying why, where hiprtc cannot be loaded.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/gpu/device_checks.h"
#include "backends/gpu/hip_compile_check.h"
#include "backends/gpu/hiprtc_api.h"
#include "cannl/support/error.h"

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

TEST(Hiprtc, CompilesAKernelToACodeObjectForEachArchitecture) {
  SKIP_WITHOUT_HIPRTC();
  const int before = backends::gpu::hiprtc_compilations();
  // EF_AMDGPU_MACH_AMDGCN_GFX90A = 0x3f, _GFX1030 = 0x36.
  for (const auto& [arch, mach] : {std::pair{"gfx90a", 0x3f}, std::pair{"gfx1030", 0x36}}) {
    const auto out = hiprtc_compile_program(cuda_axpy_source(), hiprtc_options(arch), "axpy.hip");
    EXPECT_EQ(amdgpu_mach(out.code), mach) << arch;
    EXPECT_NE(out.code.find("axpy2d"), std::string::npos) << "extern \"C\" keeps the name";
  }
  EXPECT_EQ(backends::gpu::hiprtc_compilations(), before + 2);
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
  const std::string source = "extern \"C\" __global__ void broken(float* c) { c[0] = undeclared_name_xyz; }\n";
  try {
    hiprtc_compile_program(source, hiprtc_options("gfx90a"));
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("undeclared_name_xyz"), std::string::npos) << message;
    EXPECT_NE(message.find("--offload-arch=gfx90a"), std::string::npos) << message;
  }
}

TEST(Hiprtc, CandidatesEndWithTheRuntimeThatHeldItUpToRocm52) {
  const auto names = backends::gpu::hiprtc_candidates();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "libhiprtc.so.6");
  EXPECT_NE(std::find(names.begin(), names.end(), "libamdhip64.so.5"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "/opt/rocm/lib/libhiprtc.so.6"), names.end());
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
