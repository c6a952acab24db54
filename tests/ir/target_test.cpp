// The target records backends start from: a GPU's runs blocks and threads and nothing a CPU
// printer renders (no SIMD, no micro-kernel, no host thread pool); its matmul tiles are blocked,
// by default as large as the device holds, and each tile's blocking fitted to its size.
#include "cannl/ir/target.h"

#include <gtest/gtest.h>

#include "cannl/support/error.h"

namespace cannl::ir {
namespace {

TEST(Target, GenericGpuRunsWorkgroupsWithTheDeviceLimits) {
  const GpuLimits cuda{1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32};
  const Target t = generic_gpu_target(cuda);
  EXPECT_TRUE(t.workgroups);
  EXPECT_EQ(t.gpu, cuda);
  EXPECT_FALSE(t.parallel_runtime);
  EXPECT_EQ(t.vector_bytes, 0);
  EXPECT_EQ(t.gemm, GemmShape{});
}

TEST(Target, GpuTilesDefaultTo64By64BlocksWhereTheDeviceHoldsThem) {
  const GpuLimits cuda{1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32};
  EXPECT_EQ(generic_gpu_target(cuda).gpu_tile, (TileBlocking{64, 64, 16, 4, 4}));
  EXPECT_EQ(TileBlocking({64, 64, 16, 4, 4}).threads(), 256);
  EXPECT_EQ(TileBlocking({64, 64, 16, 4, 4}).shared_bytes(4), (65 + 65) * 16 * 4);
  // 128 threads per block: the rows' blocks halve first, then the columns'.
  GpuLimits small = cuda;
  small.max_threads_per_block = 128;
  EXPECT_EQ(default_gpu_blocking(small), (TileBlocking{32, 64, 16, 4, 4}));
  small.max_threads_per_block = 64;
  EXPECT_EQ(default_gpu_blocking(small), (TileBlocking{32, 32, 16, 4, 4}));
  // 4 KiB of shared memory: (bm + bn + 2) * 16 * 4 bytes must fit.
  GpuLimits little_shared = cuda;
  little_shared.max_shared_bytes = 4096;
  EXPECT_EQ(default_gpu_blocking(little_shared), (TileBlocking{16, 32, 16, 4, 4}));
  little_shared.max_shared_bytes = 100;
  EXPECT_FALSE(default_gpu_blocking(little_shared).blocked());
}

TEST(Target, TileBlockingsShrinkToTheTile) {
  const TileBlocking b{64, 64, 16, 4, 4};
  EXPECT_EQ(fitted_blocking(b, 17, 200, 9), (TileBlocking{32, 64, 16, 4, 4}));
  EXPECT_EQ(fitted_blocking(b, 1000, 1000, 1000), b);
  // Below one register tile per thread the register tile shrinks too; the slice to the steps.
  EXPECT_EQ(fitted_blocking(b, 1, 2, 1), (TileBlocking{1, 2, 1, 1, 2}));
  EXPECT_EQ(fitted_blocking(b, 3, 5, 5), (TileBlocking{4, 8, 8, 4, 4}));
  EXPECT_FALSE(TileBlocking({64, 48, 16, 4, 5}).valid());
}

TEST(Target, GenericGpuNeedsThreadsPerBlock) {
  EXPECT_THROW(generic_gpu_target(GpuLimits{}), InternalError);
}

}  // namespace
}  // namespace cannl::ir
