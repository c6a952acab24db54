// The HIP device. Without an AMD GPU (CI, most machines) opening one is a BackendUnavailable
// naming libamdhip64 (missing, or present but hipInit finds no GPU); with a GPU the checks every
// device passes run on device 0.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/gpu/device_checks.h"
#include "backends/gpu/hip_device.h"
#include "backends/gpu/hip_runtime_api.h"
#include "cannl/backends/backend.h"

namespace cannl::test_gpu {
namespace {

std::shared_ptr<Device> hip_or_reason(std::string& why) {
  try {
    return backends::gpu::open_hip(0);
  } catch (const BackendUnavailable& e) {
    why = e.what();
    return nullptr;
  }
}

TEST(HipOpen, WithoutAGpuIsBackendUnavailableNamingLibamdhip64) {
  try {
    auto device = backends::gpu::open_hip(0);
    GTEST_SKIP() << "a HIP device is present: " << device->description();
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("libamdhip64.so"), std::string::npos) << e.what();
  }
}

TEST(HipOpen, AMissingRuntimeNamesTheLibrary) {
  try {
    backends::gpu::HipRuntimeApi::load({"libcannl-missing-amdhip64.so.5"});
    FAIL() << "expected BackendUnavailable";
  } catch (const BackendUnavailable& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the HIP runtime is not available"), std::string::npos) << message;
    EXPECT_NE(message.find("libcannl-missing-amdhip64.so.5"), std::string::npos) << message;
  }
}

TEST(HipOpen, EveryRuntimeEntryPointBindsAgainstAnInstalledRuntime) {
  // An installed libamdhip64 (Debian's ROCm 5.2 in CI) without a GPU binds every function cannl
  // asks for and then fails in hipInit: the names are checked without a GPU.
  std::string why;
  if (hip_or_reason(why)) GTEST_SKIP() << "a HIP device is present";
  if (why.find("hipInit failed") == std::string::npos) GTEST_SKIP() << "no HIP runtime here: " << why;
  EXPECT_EQ(why.find("has no function"), std::string::npos) << why;
  EXPECT_NE(why.find("did not initialize"), std::string::npos) << why;
}

TEST(HipOpen, CandidatesLookUnderRocmAfterTheLoadersPath) {
  const auto names = backends::gpu::hip_runtime_candidates();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "libamdhip64.so.6");
  EXPECT_EQ(names[1], "libamdhip64.so.5");
  EXPECT_NE(std::find(names.begin(), names.end(), "/opt/rocm/lib/libamdhip64.so.6"), names.end());
}

TEST(HipOpen, TheArchitectureIsTheGfxNameWithoutItsFeatures) {
  EXPECT_EQ(backends::gpu::gfx_arch_of("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(backends::gpu::gfx_arch_of("gfx1030"), "gfx1030");
  EXPECT_EQ(backends::gpu::gfx_arch_of(""), "");
  EXPECT_EQ(backends::gpu::gfx_arch_of("AMD Instinct MI250X"), "");
  EXPECT_EQ(backends::gpu::gfx_arch_of("gfx"), "");
}

TEST(HipDevice, PassesTheDeviceChecks) {
  std::string why;
  auto device = hip_or_reason(why);
  if (!device) GTEST_SKIP() << "no HIP device: " << why;
  EXPECT_EQ(device->api(), "hip");
  EXPECT_NE(device->description().find("(gfx"), std::string::npos) << device->description();
  const ir::GpuLimits& limits = device->limits();
  EXPECT_GE(limits.max_threads_per_block, 256);
  EXPECT_TRUE(limits.warp_size == 32 || limits.warp_size == 64) << limits.warp_size;
  EXPECT_GE(limits.max_shared_bytes, 32 * 1024);
  check_buffers(*device);

  const fs::path cache = fresh_cache_dir("hip_hit");
  auto first = check_axpy(*device, cuda_axpy_source(), cache);
  EXPECT_FALSE(first->from_cache());
  auto host = backends::make_interpreter_backend()->allocate(64);
  check_launch_errors(*device, *first, *host);
  auto other = backends::gpu::open_hip(0);
  EXPECT_TRUE(check_axpy(*other, cuda_axpy_source(), cache)->from_cache());
  EXPECT_THROW(other->launch(*first, 0, ir::KernelGeometry{}, {}), RuntimeUsageError) << "another device's module";
}

}  // namespace
}  // namespace cannl::test_gpu
