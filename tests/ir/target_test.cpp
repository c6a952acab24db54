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
  EXPECT_EQ(t.gpu_vector_bytes, 16);
}

// A GPU thread's vector loop: 4 lanes from 0 of 4-byte cells stored contiguously, reads of what
// the loop writes only at the written cell, each node written at one cell; aligned accesses
// are whole vectors from the buffer's start for every value of the other loops.
TEST(Target, GpuVectorLoopsAreFourLanesOfContiguousFourByteCells) {
  const Target t = generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32});
  const NodeRef x = make_node("x", DType::F32, {8, 64}), y = make_node("y", DType::F32, {8, 64});
  const NodeRef h = make_node("h", DType::BF16, {8, 64});
  const Symbol i = fresh_symbol(), q = fresh_symbol(), l = fresh_symbol();
  const AxisIndex lane{{{4, q}, {1, l}}, 0}, shifted{{{4, q}, {1, l}}, 1}, strided{{{4, q}, {2, l}}, 0};
  const auto loop = [&](const StmtRef& body, std::int64_t lanes = 4) {
    return std::get<For>(for_loop(l, 0, lanes, body, AxisType::Vectorized)->node);
  };
  const auto twice = [&](const AxisIndex& at) { return apply(Op::Add, DType::F32, {get(x, {AxisIndex::iterator(i), at}), get(x, {AxisIndex::iterator(i), at})}); };
  const StmtRef plain = set(y, {AxisIndex::iterator(i), lane}, twice(shifted));
  EXPECT_TRUE(gpu_vector_loop(loop(plain), t));
  EXPECT_FALSE(gpu_vector_loop(loop(plain, 8), t));
  Target no_vectors = t;
  no_vectors.gpu_vector_bytes = 0;
  EXPECT_FALSE(gpu_vector_loop(loop(plain), no_vectors));
  EXPECT_FALSE(gpu_vector_loop(loop(set(y, {AxisIndex::iterator(i), strided}, twice(lane))), t));
  EXPECT_FALSE(gpu_vector_loop(loop(set(h, {AxisIndex::iterator(i), lane}, twice(lane))), t));
  // y read one lane on from where it is written: the lanes' order would decide the value.
  const auto y_next = get(y, {AxisIndex::iterator(i), shifted});
  EXPECT_FALSE(gpu_vector_loop(loop(seq({plain, set(x, {AxisIndex::iterator(i), lane}, y_next)})), t));
  EXPECT_FALSE(gpu_vector_loop(loop(seq({plain, set(y, {AxisIndex::iterator(i), shifted}, twice(lane))})), t));
  EXPECT_TRUE(vector_aligned(*x, {AxisIndex::iterator(i), lane}, l, 4));
  EXPECT_FALSE(vector_aligned(*x, {AxisIndex::iterator(i), shifted}, l, 4));
  const NodeRef odd = make_node("odd", DType::F32, {8, 66});  // rows start 2 cells off a vector
  EXPECT_FALSE(vector_aligned(*odd, {AxisIndex::iterator(i), lane}, l, 4));
  EXPECT_TRUE(vector_aligned(*odd, {AxisIndex::fixed(2), lane}, l, 4));  // 132 cells in
  // A reversed row (x[i, 60 - 4q + l]) steps back whole vectors; 61 - 4q would not.
  EXPECT_TRUE(vector_aligned(*x, {AxisIndex::iterator(i), AxisIndex{{{-4, q}, {1, l}}, 60}}, l, 4));
  EXPECT_FALSE(vector_aligned(*x, {AxisIndex::iterator(i), AxisIndex{{{-4, q}, {1, l}}, 61}}, l, 4));
  // Three axes: [2, 3, 8] rows of 8 keep every vector aligned; in [2, 3, 6] (the first matrix)
  // only every other row does (2 x 6 = 12 cells), not every value of j.
  const Symbol j = fresh_symbol();
  const NodeRef cube = make_node("cube", DType::F32, {2, 3, 8}), narrow = make_node("narrow", DType::F32, {2, 3, 6});
  const AxisIndex lane4{{{4, q}, {1, l}}, 0};
  EXPECT_TRUE(vector_aligned(*cube, {AxisIndex::iterator(i), AxisIndex::iterator(j), lane4}, l, 4));
  EXPECT_FALSE(vector_aligned(*narrow, {AxisIndex::fixed(0), AxisIndex::iterator(j), lane4}, l, 4));
  EXPECT_TRUE(vector_aligned(*narrow, {AxisIndex::fixed(0), AxisIndex{{{2, j}}, 0}, lane4}, l, 4));
  EXPECT_FALSE(vector_aligned(*narrow, {AxisIndex::iterator(i), AxisIndex{{{2, j}}, 0}, lane4}, l, 4));  // 18 cells a matrix
  // The lane itself must step one cell: a strided lane is no vector.
  EXPECT_FALSE(vector_aligned(*x, {AxisIndex::iterator(i), strided}, l, 4));
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

// A tile with fewer blocks than the device has compute units gets smaller blocks: fewer threads
// (down to 64), then fewer cells per thread; large tiles and devices of unknown size keep theirs.
TEST(Target, TileBlockingsShrinkUntilEveryComputeUnitHasABlock) {
  Target t = generic_gpu_target({1024, {1024, 1024, 64}, {1 << 30, 65535, 65535}, 48 * 1024, 32, 132});
  t.gpu_tile = {64, 64, 16, 4, 4};
  // 4 x 16 blocks of 64 x 64: rows halved (128 threads, 128 blocks), then columns (64, 256).
  EXPECT_EQ(blocking_for_tile(t, 256, 1024, 1024), (TileBlocking{32, 32, 16, 4, 4}));
  EXPECT_EQ(blocking_for_tile(t, 4096, 4096, 4096), t.gpu_tile);
  // A small tile: 64 threads of 1 x 1 cells, 25 blocks (no smaller register tile exists).
  EXPECT_EQ(blocking_for_tile(t, 40, 40, 40), (TileBlocking{8, 8, 16, 1, 1}));
  // A 256 x 256 weight gradient: 16 blocks, then 32 x 32 (64 threads), then 2 x 2 per thread.
  EXPECT_EQ(blocking_for_tile(t, 256, 256, 1024), (TileBlocking{16, 16, 16, 2, 2}));
  t.gpu.compute_units = 0;
  EXPECT_EQ(blocking_for_tile(t, 256, 1024, 1024), t.gpu_tile);
}

TEST(Target, TensorCoreTilesDefaultTo128By128BlocksOf8Warps) {
  const GpuLimits cuda{1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32};
  const Target t = generic_gpu_target(cuda);
  EXPECT_TRUE(t.gpu_mma_formats.empty()) << "only a backend that renders them asks for tensor cores";
  EXPECT_EQ(t.gpu_mma_tile, (TileBlocking{128, 128, 32, 64, 32}));
  const TileBlocking bf16{128, 128, 32, 64, 32, NarrowFormat::BF16};
  EXPECT_TRUE(bf16.valid());
  EXPECT_EQ(bf16.threads(), 8 * 32);
  EXPECT_EQ(bf16.mma_steps(), 16);
  // 128 rows of 32 + 8 steps, or 32 steps of 128 + 8 rows: room for the larger, twice, 2 bytes each.
  EXPECT_EQ(bf16.shared_bytes(4), 2 * (128 * 40) * 2);
  const TileBlocking tf32{128, 128, 32, 64, 32, NarrowFormat::TF32};
  EXPECT_EQ(tf32.mma_steps(), 8);
  EXPECT_EQ(tf32.shared_bytes(4), 2 * (128 * 36) * 4);
  // Whole MMA tiles per warp (pairs of 8-column ones) and slices of whole MMA steps.
  EXPECT_FALSE(TileBlocking({128, 128, 32, 64, 8, NarrowFormat::BF16}).valid());
  EXPECT_FALSE(TileBlocking({128, 128, 8, 64, 32, NarrowFormat::BF16}).valid());
  EXPECT_TRUE(TileBlocking({128, 128, 8, 64, 32, NarrowFormat::TF32}).valid());
  // A device with little shared memory gets narrower blocks.
  const GpuLimits small{1024, {1024, 1024, 64}, {65535, 65535, 65535}, 16384, 32};
  EXPECT_EQ(default_mma_blocking(small), (TileBlocking{64, 32, 32, 64, 32}));
}

TEST(Target, TensorCoreBlockingsShrinkToTheTile) {
  const TileBlocking b{128, 128, 32, 64, 32};
  EXPECT_EQ(fitted_mma_blocking(b, NarrowFormat::BF16, 40, 1000, 20), (TileBlocking{64, 128, 32, 64, 32, NarrowFormat::BF16}));
  EXPECT_EQ(fitted_mma_blocking(b, NarrowFormat::BF16, 17, 33, 65), (TileBlocking{32, 64, 32, 32, 32, NarrowFormat::BF16}));
  // Down to one MMA tile of 16 x 16 per warp, and a slice of one MMA step.
  EXPECT_EQ(fitted_mma_blocking(b, NarrowFormat::TF32, 1, 2, 5), (TileBlocking{16, 16, 8, 16, 16, NarrowFormat::TF32}));
  EXPECT_EQ(fitted_mma_blocking(b, NarrowFormat::F16, 1, 2, 5), (TileBlocking{16, 16, 16, 16, 16, NarrowFormat::F16}));
}

TEST(Target, GenericGpuNeedsThreadsPerBlock) {
  EXPECT_THROW(generic_gpu_target(GpuLimits{}), InternalError);
}

}  // namespace
}  // namespace cannl::ir
