// NVRTC alone (no driver, no GPU): CUDA source compiles to PTX for sm_90 with cannl's options, and
// a source that does not compile is a CompileError with NVRTC's log. Skips, saying why, where
// libnvrtc cannot be loaded.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/gpu/device.h"
#include "backends/gpu/device_checks.h"
#include "backends/gpu/nvrtc_api.h"
#include "cannl/support/error.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::nvrtc_compile;

// The NVRTC version, or "" with the reason in `why`.
std::string nvrtc_or_reason(std::string& why) {
  try {
    return backends::gpu::nvrtc_version();
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return "";
  }
}

#define SKIP_WITHOUT_NVRTC()                                        \
  do {                                                              \
    std::string why;                                                \
    if (nvrtc_or_reason(why).empty()) GTEST_SKIP() << why;          \
  } while (false)

TEST(Nvrtc, CompilesAKernelToPtxForSm90) {
  SKIP_WITHOUT_NVRTC();
  const int before = backends::gpu::nvrtc_compilations();
  const std::string ptx = nvrtc_compile(cuda_axpy_source(), "sm_90");
  EXPECT_EQ(backends::gpu::nvrtc_compilations(), before + 1);
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos) << ptx.substr(0, 400);
  EXPECT_NE(ptx.find(".entry axpy2d"), std::string::npos) << "extern \"C\" keeps the name";
}

TEST(Nvrtc, GivesACubinForTheRealArchitecture) {
  SKIP_WITHOUT_NVRTC();
  const auto out = backends::gpu::nvrtc_compile_program(cuda_axpy_source(), backends::gpu::nvrtc_options("sm_90"));
  ASSERT_GE(out.cubin.size(), 4u);
  EXPECT_EQ(out.cubin.substr(0, 4), "\x7f" "ELF");
}

TEST(Nvrtc, DoesNotContractMultiplyAndAddIntoFma) {
  SKIP_WITHOUT_NVRTC();
  // The interpreter rounds the product and then the sum; an fma would round once.
  const std::string source =
      "extern \"C\" __global__ void mad(float* c, const float* a, const float* b, const float* d) {\n"
      "  c[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x] + d[threadIdx.x];\n}\n";
  const std::string ptx = nvrtc_compile(source, "sm_90");
  EXPECT_EQ(ptx.find("fma."), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("mul.rn.f32"), std::string::npos) << ptx;
  const auto options = backends::gpu::nvrtc_options("sm_90");
  EXPECT_NE(std::find(options.begin(), options.end(), "--fmad=false"), options.end());
  EXPECT_EQ(std::find(options.begin(), options.end(), "--use_fast_math"), options.end());
}

TEST(Nvrtc, ACompileErrorCarriesNvrtcsLog) {
  SKIP_WITHOUT_NVRTC();
  const std::string source = "extern \"C\" __global__ void broken(float* c) { c[0] = undeclared_name_xyz; }\n";
  try {
    nvrtc_compile(source, "sm_90");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("undeclared_name_xyz"), std::string::npos) << message;
    EXPECT_NE(message.find("--gpu-architecture=sm_90"), std::string::npos) << message;
  }
}

// A real architecture makes NVRTC assemble the PTX (ptxas), so the inline PTX of tensor-core
// tiles is checked, operands and all, without a GPU: a well-formed mma.sync compiles for sm_80
// and sm_90, one with a B operand short of a register or a target before sm_80 does not.
TEST(Nvrtc, AssemblesInlineMmaPtxForRealArchitectures) {
  SKIP_WITHOUT_NVRTC();
  const auto kernel = [](const std::string& b_operand) {
    return "extern \"C\" __global__ void mma(float* c, const unsigned* a) {\n"
           "  float d[4] = {0, 0, 0, 0};\n"
           "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " +
           b_operand + ", {%0, %1, %2, %3};\"\n"
           "      : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
           "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(a[4]), \"r\"(a[5]));\n"
           "  c[threadIdx.x] = d[0] + d[1] + d[2] + d[3];\n}\n";
  };
  for (const char* arch : {"sm_80", "sm_90"}) {
    const auto out = backends::gpu::nvrtc_compile_program(kernel("{%8, %9}"), backends::gpu::nvrtc_options(arch));
    EXPECT_FALSE(out.cubin.empty()) << arch;
    EXPECT_THROW(nvrtc_compile(kernel("{%8}"), arch), CompileError) << arch;
  }
  EXPECT_THROW(nvrtc_compile(kernel("{%8, %9}"), "sm_75"), CompileError);
}

// An architecture NVRTC does not compile for (here one that does not exist) is not a compile
// error of the source: NVRTC returns INVALID_OPTION, and only its log names the option.
TEST(Nvrtc, AnArchitectureNvrtcDoesNotKnowIsACompileErrorWithTheOptionAndLog) {
  SKIP_WITHOUT_NVRTC();
  try {
    (void)nvrtc_compile(cuda_axpy_source(), "sm_1");
    FAIL() << "sm_1 compiled";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("could not compile"), std::string::npos) << what;
    EXPECT_NE(what.find("--gpu-architecture=sm_1"), std::string::npos) << what;
    EXPECT_NE(what.find("log:\n"), std::string::npos) << what;
  }
}

TEST(Nvrtc, CudaMmaFormatsFromSm80On) {
  using backends::gpu::cuda_mma_formats;
  EXPECT_TRUE(cuda_mma_formats("sm_75").empty());
  EXPECT_EQ(cuda_mma_formats("sm_80").size(), 3u);
  EXPECT_EQ(cuda_mma_formats("sm_90a").size(), 3u);
  EXPECT_EQ(cuda_mma_formats("sm_100").size(), 3u);
  EXPECT_TRUE(cuda_mma_formats("gfx90a").empty());
  EXPECT_TRUE(cuda_mma_formats("sm_").empty());
}

}  // namespace
}  // namespace cannl::test_gpu
