// The tuner's GPU seeds (tune/candidates.h) and the target fields its cache keeps
// (tune/target_fields.h): blocking sketches are whole and launchable on the device and never the
// target's own; a GPU target's tile and tensor-core blockings survive the cache's text form.
#include <gtest/gtest.h>

#include "cannl/ir/target.h"
#include "tune/candidates.h"
#include "tune/target_fields.h"

namespace cannl::tune {
namespace {

ir::Target gpu(std::int64_t shared_bytes) {
  ir::Target t = ir::generic_gpu_target({1024, {1024, 1024, 64}, {1 << 30, 65535, 65535}, shared_bytes, 32, 132});
  t.gpu_mma_formats = {ir::NarrowFormat::BF16, ir::NarrowFormat::TF32};
  return t;
}

TEST(GpuSketches, TileBlockingsAreWholeLaunchableAndNotTheTargetsOwn) {
  const ir::Target t = gpu(48 * 1024);
  const auto sketches = gpu_tile_sketches(t);
  EXPECT_GE(sketches.size(), 6u);
  for (const ir::TileBlocking& b : sketches) {
    EXPECT_TRUE(b.valid()) << describe_blocking(b);
    EXPECT_TRUE(ir::fits_device(b, t.gpu)) << describe_blocking(b);
    EXPECT_FALSE(b == t.gpu_tile) << describe_blocking(b);
  }
  // A target with asynchronous copies pipelines a sketch where both stages fit (the final
  // lowering round, ir::pipelined_blocking): every sketch fits still, unpipelined where they do not.
  ir::Target async = t;
  async.gpu_async_copy = true;
  int pipelined = 0;
  for (const ir::TileBlocking& b : sketches) {
    const ir::TileBlocking p = ir::pipelined_blocking(b, async);
    EXPECT_TRUE(ir::fits_device(p, t.gpu)) << describe_blocking(b);
    pipelined += p.async_copy ? 1 : 0;
  }
  EXPECT_GT(pipelined, 0);
  EXPECT_NE(full_target_text(async), full_target_text(t));  // a winner's cache key says so
  // Less shared memory: fewer sketches, every one within it.
  const ir::Target small = gpu(8 * 1024);
  const auto fewer = gpu_tile_sketches(small);
  EXPECT_LT(fewer.size(), sketches.size());
  for (const ir::TileBlocking& b : fewer) EXPECT_LE(b.shared_bytes(4), 8 * 1024) << describe_blocking(b);
}

TEST(GpuSketches, TensorCoreBlockingsAreWholeMmaTilesThatFit) {
  const ir::Target t = gpu(48 * 1024);
  const auto sketches = gpu_mma_sketches(t);
  EXPECT_GE(sketches.size(), 4u);
  for (ir::TileBlocking b : sketches) {
    EXPECT_FALSE(b == t.gpu_mma_tile) << describe_blocking(b, "warp");
    b.mma = ir::NarrowFormat::BF16;
    EXPECT_TRUE(b.valid()) << describe_blocking(b, "warp");
    b.mma = ir::NarrowFormat::TF32;
    EXPECT_TRUE(ir::fits_device(b, t.gpu)) << describe_blocking(b, "warp");
  }
  EXPECT_LT(gpu_mma_sketches(gpu(16 * 1024)).size(), sketches.size());
}

TEST(GpuSketches, BlockingsSurviveTheCachesTextForm) {
  ir::Target t = gpu(48 * 1024);
  t.gpu_tile = {128, 64, 8, 8, 4};
  t.gpu_mma_tile = {64, 128, 32, 32, 64};
  const std::string text = target_fields_text(t);
  EXPECT_NE(text.find("gpu_tile 128 64 8 8 4 gpu_mma 64 128 32 32 64"), std::string::npos) << text;
  const auto back = with_target_fields(gpu(48 * 1024), text);
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_EQ(back->gpu_tile, t.gpu_tile);
  EXPECT_EQ(back->gpu_mma_tile, t.gpu_mma_tile);
  // A CPU target's text has neither; a blocking that is not whole is refused.
  EXPECT_EQ(target_fields_text(ir::cpu_target(64)).find("gpu_"), std::string::npos);
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_tile 64 48 16 4 5").has_value());
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_mma 128 128 32 64 8").has_value());
  EXPECT_FALSE(with_target_fields(t, "12 2 384 512 3072 4096 2 0 gpu_tile 64 64 16 4 4 extra").has_value());
}

}  // namespace
}  // namespace cannl::tune
