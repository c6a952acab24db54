// Which asynchronous copies a pipelined tile's staging may use (ir::async_copy_elements): 16-byte
// copies (four f32 cells) only where the operand's static strides and offsets prove every group of
// four along the slice's rows aligned, for every value of the loops around the tile; and what a
// pipelined blocking costs in shared memory (both stages, counted by fits_device).
#include <gtest/gtest.h>

#include "cannl/ir/target.h"
#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::it;

// d[i, j] += a[i, k] * b[k, j] over m x n x s, with b of `b_cols` columns (its row stride).
struct Matmul {
  Symbol i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  TileMma t;
  Matmul(std::int64_t m, std::int64_t n, std::int64_t s, std::int64_t b_cols) {
    t.d = {make_node("d", DType::F32, {m, n}), {it(i), it(j)}};
    t.a = {make_node("a", DType::F32, {m, s}), {it(i), it(k)}};
    t.b = {make_node("b", DType::F32, {s, b_cols}), {it(k), it(j)}};
    t.i = {i, 0, m};
    t.j = {j, 0, n};
    t.k = {k, 0, s};
    t.fallback = comment("the nest");
  }
  std::vector<TileAxis> rows() const { return {t.i}; }
  std::vector<TileAxis> cols() const { return {t.j}; }
  std::vector<TileAxis> steps() const { return {t.k}; }
};

TEST(AsyncCopy, SixteenBytesWhereEveryGroupOfFourIsAlignedNeighbours) {
  const Matmul m(64, 40, 24, 40);
  EXPECT_EQ(async_copy_elements(m.t, m.t.b, m.cols(), m.steps()), 4);  // b's rows along its unit stride
  EXPECT_EQ(async_copy_elements(m.t, m.t.a, m.steps(), m.rows()), 4);  // a's rows of 24 steps
  // Along a's rows (stride 24) no cells are neighbours.
  EXPECT_EQ(async_copy_elements(m.t, m.t.a, m.rows(), m.steps()), 1);
}

TEST(AsyncCopy, FourBytesWhereAStrideOrTheOriginIsNotAMultipleOfFour) {
  const Matmul odd_rows(64, 40, 24, 42);  // b's row k starts at 42 k
  EXPECT_EQ(async_copy_elements(odd_rows.t, odd_rows.t.b, odd_rows.cols(), odd_rows.steps()), 1);
  const Matmul partial(64, 38, 24, 40);  // 38 columns: a group would straddle b's rows
  EXPECT_EQ(async_copy_elements(partial.t, partial.t.b, partial.cols(), partial.steps()), 1);
  Matmul shifted(64, 40, 24, 44);
  shifted.t.j = {shifted.j, 2, 42};  // the tile starts at column 2
  EXPECT_EQ(async_copy_elements(shifted.t, shifted.t.b, shifted.cols(), shifted.steps()), 1);
  shifted.t.j = {shifted.j, 4, 44};
  EXPECT_EQ(async_copy_elements(shifted.t, shifted.t.b, shifted.cols(), shifted.steps()), 4);
  Matmul f64(64, 40, 24, 40);
  f64.t.b.node = make_node("b64", DType::F64, {24, 40});
  EXPECT_EQ(async_copy_elements(f64.t, f64.t.b, f64.cols(), f64.steps()), 1);
}

TEST(AsyncCopy, LoopsAroundTheTileMustMoveByWholeGroups) {
  // b[961 n + 40 k + j] under a batch loop n: batch n's rows start at 961 n, aligned for n = 0 only.
  Matmul m(64, 40, 24, 40);
  const Symbol n = fresh_symbol();
  const auto flat = [&](std::int64_t batch_stride, std::int64_t offset) {
    return TileOperand{make_node("b", DType::F32, {3000}), {AxisIndex{{{batch_stride, n}, {40, m.k}, {1, m.j}}, offset}}};
  };
  m.t.b = flat(961, 0);
  EXPECT_EQ(async_copy_elements(m.t, m.t.b, m.cols(), m.steps()), 1);
  m.t.b = flat(960, 0);
  EXPECT_EQ(async_copy_elements(m.t, m.t.b, m.cols(), m.steps()), 4);
  m.t.b = flat(960, 1);  // a constant offset of one cell
  EXPECT_EQ(async_copy_elements(m.t, m.t.b, m.cols(), m.steps()), 1);
}

TEST(AsyncCopy, BothStagesCountInSharedMemory) {
  TileBlocking b{64, 64, 16, 4, 4};
  b.async_copy = true;
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.shared_bytes(4), 2 * (68 + 68) * 16 * 4);
  TileBlocking tf32{128, 128, 32, 64, 32, NarrowFormat::TF32, true};
  EXPECT_TRUE(tf32.valid());
  EXPECT_EQ(tf32.shared_bytes(4), 2 * 2 * (128 * 36) * 4);
  // A bf16 tile converts while staging: no copy engine can do that.
  EXPECT_FALSE((TileBlocking{128, 128, 32, 64, 32, NarrowFormat::BF16, true}.valid()));

  const GpuLimits sm90{1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32};
  Target t = generic_gpu_target(sm90);
  EXPECT_FALSE(pipelined_blocking({64, 64, 16, 4, 4}, t).async_copy);  // the target copies synchronously
  t.gpu_async_copy = true;
  EXPECT_TRUE(pipelined_blocking({64, 64, 16, 4, 4}, t).async_copy);
  EXPECT_FALSE(pipelined_blocking({128, 128, 32, 64, 32, NarrowFormat::BF16}, t).async_copy);
  // Two stages of 128 x 128 x 32 tf32 slices take 73 KB, over the 48 KB of a block: one stage stays.
  EXPECT_FALSE(pipelined_blocking({128, 128, 32, 64, 32, NarrowFormat::TF32}, t).async_copy);
  EXPECT_TRUE(fits_device({128, 128, 32, 64, 32, NarrowFormat::TF32}, sm90));
  EXPECT_TRUE(pipelined_blocking({64, 64, 32, 32, 32, NarrowFormat::TF32}, t).async_copy);
}

}  // namespace
}  // namespace cannl::ir
