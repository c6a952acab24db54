// Static work per thread of GPU kernels, and when a kernel starves the device.
#include "cannl/ir/kernel_cost.h"

#include <gtest/gtest.h>

namespace cannl::ir {
namespace {

AxisIndex it(Symbol s) { return AxisIndex::iterator(s); }

// CUDA sm_90's launch limits on a device of `units` multiprocessors (0: unknown).
GpuLimits limits_with(std::int64_t units) {
  GpuLimits g{1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32};
  g.compute_units = units;
  return g;
}

// for b Grid(blocks): for t Workgroup(threads): for k (steps): c[b, t] += 1
StmtRef blocks_of_serial_sums(const NodeRef& c, std::int64_t blocks, std::int64_t threads, std::int64_t steps) {
  const Symbol b = fresh_symbol(), t = fresh_symbol(), k = fresh_symbol();
  return for_loop(b, 0, blocks,
                  for_loop(t, 0, threads,
                           for_loop(k, 0, steps, set(c, {it(b), it(t)}, constant(1, DType::F32))),
                           AxisType::Workgroup),
                  AxisType::Grid);
}

TEST(KernelCost, SerialLoopsMultiplyAndBoundLoopsRunOnceAThread) {
  const NodeRef c = make_node("c", DType::F32, {64, 256});
  const StmtRef body = blocks_of_serial_sums(c, 64, 256, 100);
  EXPECT_EQ(kernel_steps_per_thread(body, kernel_geometry(body)), 100);
  // Two stores per step, and a serial loop of 3 around the steps.
  const Symbol b = fresh_symbol(), t = fresh_symbol(), o = fresh_symbol(), k = fresh_symbol();
  const StmtRef store = set(c, {it(b), it(t)}, constant(1, DType::F32));
  const StmtRef two = for_loop(
      b, 0, 64,
      for_loop(t, 0, 256, for_loop(o, 0, 3, for_loop(k, 0, 10, seq({store, store}))), AxisType::Workgroup),
      AxisType::Grid);
  EXPECT_EQ(kernel_steps_per_thread(two, kernel_geometry(two)), 60);
}

TEST(KernelCost, VectorizedLoopsTakeFourLanesAStep) {
  const NodeRef c = make_node("c", DType::F32, {18});
  const Symbol v = fresh_symbol();
  const StmtRef body = for_loop(v, 0, 18, set(c, {it(v)}, constant(1, DType::F32)), AxisType::Vectorized);
  EXPECT_EQ(kernel_steps_per_thread(body, kernel_geometry(body)), 5);
}

TEST(KernelCost, BlockedTileCountsItsSlicesStagingAndRegisterBlock) {
  const NodeRef a = make_node("a", DType::F32, {512, 512}), b = make_node("b", DType::F32, {512, 512});
  const NodeRef d = make_node("d", DType::F32, {512, 512});
  const Symbol i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  TileMma t;
  t.d = {d, {it(i), it(j)}};
  t.a = {a, {it(i), it(k)}};
  t.b = {b, {it(k), it(j)}};
  t.i = {i, 0, 512};
  t.j = {j, 0, 512};
  t.k = {k, 0, 512};
  t.fallback = comment("the nest");
  t.blocking = {64, 64, 16, 4, 4};
  // 32 slices of (128 x 16 staged elements over 256 threads + 16 steps x 4 x 4 FMAs), then 16 stores.
  EXPECT_EQ(tile_steps_per_thread(t), 32 * (8 + 256) + 16);
  EXPECT_EQ(kernel_steps_per_thread(tile_mma(t), kernel_geometry(tile_mma(t))), 32 * (8 + 256) + 16);
  // On tensor cores: 8 warps of 64 x 32 cells, 4 x 4 MMAs of 16 steps per 32-step slice.
  t.blocking = {128, 128, 32, 64, 32, NarrowFormat::BF16};
  EXPECT_EQ(tile_steps_per_thread(t), 16 * (32 + 4 * 4 * 2) + 64);
}

TEST(KernelCost, FewThreadsWithLongSerialWorkStarveTheDevice) {
  const NodeRef c = make_node("c", DType::F32, {1, 64});
  const StmtRef narrow = blocks_of_serial_sums(c, 1, 64, 4096);
  const KernelLoad load = kernel_load(narrow, kernel_geometry(narrow), limits_with(132));
  EXPECT_EQ(load.threads, 64);
  EXPECT_EQ(load.device_threads, 132 * 2048);
  EXPECT_TRUE(load.starves);
  EXPECT_EQ(load.critical_steps, 4096);
  // The same steps on enough threads, or few steps on few threads, do not.
  const NodeRef wide_c = make_node("w", DType::F32, {1024, 256});
  const StmtRef wide = blocks_of_serial_sums(wide_c, 1024, 256, 4096);
  const KernelLoad wide_load = kernel_load(wide, kernel_geometry(wide), limits_with(132));
  EXPECT_FALSE(wide_load.starves);
  EXPECT_EQ(wide_load.waves, 1);
  const StmtRef short_work = blocks_of_serial_sums(c, 1, 64, 100);
  EXPECT_FALSE(kernel_load(short_work, kernel_geometry(short_work), limits_with(132)).starves);
  // A device that does not say how many units it has: no judgement, one wave.
  const KernelLoad unknown = kernel_load(narrow, kernel_geometry(narrow), limits_with(0));
  EXPECT_FALSE(unknown.starves);
  EXPECT_EQ(unknown.waves, 1);
  EXPECT_EQ(unknown.device_share(), 0);
}

TEST(KernelCost, ThreadsBeyondTheDeviceRunInWaves) {
  const NodeRef c = make_node("c", DType::F32, {4096, 256});
  const StmtRef body = blocks_of_serial_sums(c, 4096, 256, 10);
  const KernelLoad load = kernel_load(body, kernel_geometry(body), limits_with(132));
  EXPECT_EQ(load.waves, (4096 * 256 + 132 * 2048 - 1) / (132 * 2048));
  EXPECT_EQ(load.critical_steps, 10 * load.waves);
  EXPECT_EQ(load.device_share(), 1.0);
}

// A kernel fission merged from an elementwise nest over 4096 blocks and a long row reduction
// over 8 (a row maximum beside the one-hot compare): the reduction's 50000 steps count once, on
// its own 2048 threads, which starve the device although the launch fills it four times over.
TEST(KernelCost, MergedStatementsCountOnTheThreadsTheyBind) {
  const NodeRef wide = make_node("wide", DType::F32, {4096, 256}), rows = make_node("rows", DType::F32, {8, 256});
  const StmtRef body = seq({blocks_of_serial_sums(wide, 4096, 256, 1), blocks_of_serial_sums(rows, 8, 256, 50000)});
  const KernelLoad load = kernel_load(body, kernel_geometry(body), limits_with(132));
  EXPECT_EQ(load.threads, 4096 * 256);
  EXPECT_EQ(load.steps_per_thread, 50001);
  EXPECT_EQ(load.waves, 4);
  EXPECT_EQ(load.critical_steps, 4 * 1 + 1 * 50000);
  EXPECT_TRUE(load.starves);
  // On 64 blocks (16384 threads, over a 64th of the device) the reduction no longer starves it.
  const NodeRef more_rows = make_node("more_rows", DType::F32, {64, 256});
  const StmtRef spread = seq({blocks_of_serial_sums(wide, 4096, 256, 1), blocks_of_serial_sums(more_rows, 64, 256, 50000)});
  EXPECT_FALSE(kernel_load(spread, kernel_geometry(spread), limits_with(132)).starves);
}

// A WorkgroupReduce loop in the block-reduction form runs as a tree (a step per thread and one
// per halving); any other runs serially on the slot's first thread, every step counted.
TEST(KernelCost, WorkgroupReduceLoopsThatAreNoTreeRunOnOneThread) {
  const NodeRef x = make_node("x", DType::F32, {4, 64}), s = make_node("s", DType::F32, {4});
  const Symbol b = fresh_symbol(), r = fresh_symbol();
  const ScalarRef sum = apply(Op::Add, DType::F32, {get(s, {it(b)}), get(x, {it(b), it(r)})});
  const StmtRef tree = for_loop(b, 0, 4, for_loop(r, 0, 64, set(s, {it(b)}, sum), AxisType::WorkgroupReduce), AxisType::Grid);
  EXPECT_EQ(kernel_steps_per_thread(tree, kernel_geometry(tree)), 1 + 7);
  const StmtRef two = set(s, {it(b)}, sum);
  const StmtRef serial = for_loop(b, 0, 4, for_loop(r, 0, 64, seq({two, two}), AxisType::WorkgroupReduce), AxisType::Grid);
  EXPECT_EQ(kernel_steps_per_thread(serial, kernel_geometry(serial)), 64 * 2);
}

}  // namespace
}  // namespace cannl::ir
