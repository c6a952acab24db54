// Launch checks: a geometry over the device's limits is a RuntimeUsageError naming the kernel and
// the limit; an empty slot launches nothing; pending kernels are named for later failures.
#include "backends/gpu/launch_checks.h"

#include <gtest/gtest.h>

#include "cannl/support/error.h"

namespace cannl::backends::gpu {
namespace {

ir::GpuLimits h200_like() {
  ir::GpuLimits limits;
  limits.max_threads_per_block = 1024;
  limits.max_block_dims = {1024, 1024, 64};
  limits.max_grid_dims = {2147483647, 65535, 65535};
  limits.max_shared_bytes = 48 * 1024;
  limits.warp_size = 32;
  return limits;
}

void expect_over_limit(const ir::KernelGeometry& geometry, const std::string& what) {
  try {
    launchable(geometry, h200_like(), "add_k0");
    ADD_FAILURE() << "expected RuntimeUsageError for " << what;
  } catch (const RuntimeUsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("add_k0"), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  }
}

TEST(LaunchChecks, AGeometryOverALimitIsARuntimeUsageError) {
  EXPECT_TRUE(launchable({.grid = {4, 1, 1}, .block = {256, 4, 1}}, h200_like(), "add_k0"));
  expect_over_limit({.grid = {4, 1, 1}, .block = {2048, 1, 1}}, "block.x is 2048");
  expect_over_limit({.grid = {4, 1, 1}, .block = {64, 32, 1}}, "threads per block is 2048");
  expect_over_limit({.grid = {1, 70000, 1}, .block = {1, 1, 1}}, "grid.y is 70000");
  expect_over_limit({.grid = {1, 1, 1}, .block = {1, 1, 1}, .shared_bytes = 64 * 1024}, "shared memory");
}

TEST(LaunchChecks, AnEmptySlotLaunchesNothing) {
  EXPECT_FALSE(launchable({.grid = {0, 1, 1}, .block = {32, 1, 1}}, h200_like(), "k"));
  EXPECT_FALSE(launchable({.grid = {8, 1, 1}, .block = {32, 0, 1}}, h200_like(), "k"));
}

TEST(LaunchChecks, PendingKernelsNameTheLastFewAndCountTheRest) {
  PendingKernels pending;
  EXPECT_EQ(pending.describe(), "");
  pending.add("a");
  pending.add("b");
  EXPECT_EQ(pending.describe(), "kernels enqueued since the last synchronization: a, b");
  for (int k = 0; k < 10; ++k) pending.add("k" + std::to_string(k));
  EXPECT_EQ(pending.describe(),
            "kernels enqueued since the last synchronization: 4 earlier, then k2, k3, k4, k5, k6, k7, k8, k9");
  pending.clear();
  EXPECT_EQ(pending.describe(), "");
}

}  // namespace
}  // namespace cannl::backends::gpu
