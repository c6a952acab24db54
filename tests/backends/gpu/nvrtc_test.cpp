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

}  // namespace
}  // namespace cannl::test_gpu
