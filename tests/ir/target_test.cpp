// The target records backends start from: a GPU's runs blocks and threads and nothing a CPU
// printer renders (no SIMD, no micro-kernel, no host thread pool).
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

TEST(Target, GenericGpuNeedsThreadsPerBlock) {
  EXPECT_THROW(generic_gpu_target(GpuLimits{}), InternalError);
}

}  // namespace
}  // namespace cannl::ir
