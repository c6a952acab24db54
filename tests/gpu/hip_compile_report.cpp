// At the end of test_gpu: how many modules and kernels hiprtc compiled as HIP (config key
// hip_compile_check, which CMake sets for this executable: every module the tests run on OpenCL
// is also compiled for gfx90a, wave64, and gfx1030, wave32), printed and appended to
// hip_compile_check.tsv in the working directory (ctest runs one process per test;
// scripts/test.sh sums the file for the log).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "backends/gpu/hip_compile_check.h"
#include "cannl/support/config.h"

namespace cannl {
namespace {

class HipCompileReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto checks = backends::gpu::hip_compile_checks();
    if (checks.modules == 0 && checks.duplicates == 0 && checks.unavailable.empty()) return;
    std::printf("[cannl] hiprtc compiled %lld HIP modules (%lld kernels) for %s in %.2f s, %lld repeated texts "
                "skipped%s\n",
                static_cast<long long>(checks.modules), static_cast<long long>(checks.kernels),
                config::get("hip_compile_check").c_str(), checks.seconds, static_cast<long long>(checks.duplicates),
                checks.unavailable.empty() ? "" : ("; hiprtc unavailable: " + checks.unavailable).c_str());
    std::ofstream("hip_compile_check.tsv", std::ios::app)
        << checks.modules << "\t" << checks.kernels << "\t" << checks.seconds << "\t"
        << (checks.unavailable.empty() ? "ok" : "unavailable") << "\n";
  }
};

const auto* const kReport = ::testing::AddGlobalTestEnvironment(new HipCompileReport);

}  // namespace
}  // namespace cannl
