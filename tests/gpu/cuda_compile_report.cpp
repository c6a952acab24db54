// At the end of test_gpu: how many modules and kernels NVRTC compiled as CUDA (config key
// cuda_compile_check, which CMake sets for this executable: every module the tests run on OpenCL
// is also compiled for sm_90), printed and appended to cuda_compile_check.tsv in the working
// directory (ctest runs one process per test; scripts/test.sh sums the file for the log).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "backends/gpu/cuda_compile_check.h"
#include "cannl/support/config.h"

namespace cannl {
namespace {

class CudaCompileReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto checks = backends::gpu::cuda_compile_checks();
    if (checks.modules == 0 && checks.unavailable.empty()) return;
    std::printf("[cannl] NVRTC compiled %lld CUDA modules (%lld kernels) for %s%s\n",
                static_cast<long long>(checks.modules), static_cast<long long>(checks.kernels),
                config::get("cuda_compile_check").c_str(),
                checks.unavailable.empty() ? "" : ("; NVRTC unavailable: " + checks.unavailable).c_str());
    std::ofstream("cuda_compile_check.tsv", std::ios::app)
        << checks.modules << "\t" << checks.kernels << "\t" << (checks.unavailable.empty() ? "ok" : "unavailable") << "\n";
  }
};

const auto* const kReport = ::testing::AddGlobalTestEnvironment(new CudaCompileReport);

}  // namespace
}  // namespace cannl
