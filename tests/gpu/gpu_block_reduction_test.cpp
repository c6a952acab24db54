// WorkgroupReduce loops on the GPU backend: an accumulation in the block-reduction form runs as a
// tree in workgroup-shared memory (exact for integer sums, within rounding of the serial order
// for floats, the same bits on every run), any other form serially on the slot's first thread.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "backends/run_util.h"
#include "cannl/interp/interpreter.h"
#include "cannl/ir/block_reduction.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::AxisType;
using ir::DType;
using schedule::testing::it;

struct RowReduction {
  ir::LoweredRoutine routine;
  ir::NodeRef x, s;
};

// s[i] = accum(s[i], x[i, r]) over i in [0, rows) as blocks and r in [0, cols) reduced by threads.
RowReduction row_reduction(ir::Op accum, DType dtype, std::int64_t rows, std::int64_t cols) {
  RowReduction t;
  t.x = ir::make_node("x", dtype, {rows, cols});
  t.s = ir::make_node("s", dtype, {rows});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto value = ir::apply(accum, dtype, {ir::get(t.s, {it(i)}), ir::get(t.x, {it(i), it(r)})});
  const auto body = ir::for_loop(i, 0, rows, ir::for_loop(r, 0, cols, ir::set(t.s, {it(i)}, value), AxisType::WorkgroupReduce),
                                 AxisType::Grid);
  t.routine = {"row_reduce", body, {}};
  return t;
}

test_util::Bytes pattern(DType dtype, std::int64_t n) {
  if (dtype == DType::I32) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::int32_t>((k * 7919) % 2001) - 1000;
    return test_util::bytes_of(v);
  }
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<float>(k)) * 3.0f;
  return test_util::bytes_of(v);
}

// Runs `t` on the GPU backend and on the interpreter from the same x; returns {gpu s, interp s}.
std::pair<test_util::Bytes, test_util::Bytes> run_both(backends::Backend& gpu, const RowReduction& t) {
  const auto x = pattern(t.x->dtype, t.x->num_elements());
  const auto on_gpu = test_util::run_on(gpu, {t.routine, {t.x, t.s}}, {x, {}});
  const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {t.routine, {t.x, t.s}}, {x, {}});
  return {on_gpu[1], on_interp[1]};
}

TEST(GpuBlockReduction, IntegerSumsAreExactWhateverTheOrderAndWrap) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const std::int64_t cols : {1, 2, 37, 100, 256}) {
    const RowReduction t = row_reduction(ir::Op::Add, DType::I32, 24, cols);
    const auto [got, want] = run_both(*gpu, t);
    EXPECT_EQ(got, want) << cols << " columns";
  }
  // Sums past 2^31 wrap as the interpreter's do (through the unsigned type in the tree).
  const RowReduction big = row_reduction(ir::Op::Add, DType::I32, 4, 100);
  std::vector<std::int32_t> xs(400);
  for (std::size_t k = 0; k < xs.size(); ++k) xs[k] = (k % 3 == 0 ? -1 : 1) * (0x3fffffff - static_cast<std::int32_t>(k));
  const auto on_gpu = test_util::run_on(*gpu, {big.routine, {big.x, big.s}}, {test_util::bytes_of(xs), {}});
  const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {big.routine, {big.x, big.s}}, {test_util::bytes_of(xs), {}});
  EXPECT_EQ(on_gpu[1], on_interp[1]);
}

TEST(GpuBlockReduction, FloatSumMaxAndMinAgreeWithTheSerialLoop) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const ir::Op op : {ir::Op::Add, ir::Op::Max, ir::Op::Min}) {
    const RowReduction t = row_reduction(op, DType::F32, 16, 100);
    const auto compiled = gpu->compile({t.routine, {t.x, t.s}});
    if (gpu_test::prints_kernels()) {
      EXPECT_NE(compiled->source().find("cannl_red_"), std::string::npos) << "not rendered as a tree:\n" << compiled->source();
    }
    const auto [got, want] = run_both(*gpu, t);
    const auto g = test_util::values_of<float>(got), w = test_util::values_of<float>(want);
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (op == ir::Op::Add) {
        EXPECT_NEAR(g[k], w[k], 1e-5f * 300) << "row " << k;  // re-associated: rounding only
      } else {
        EXPECT_EQ(g[k], w[k]) << ir::op_name(op) << " row " << k;  // max and min are exact
      }
    }
    EXPECT_EQ(run_both(*gpu, t).first, got) << "a second run gave other bits";
  }
}

// A row split into slices of a block that does not divide it: the last slice's guard bounds
// its tree (exact integer sums for every remainder, 1 and a block's worth less one included).
TEST(GpuBlockReduction, GuardedLastSlicesReduceOnlyTheirOwnSteps) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const std::int64_t cols : {65, 100, 127}) {
    RowReduction t = row_reduction(ir::Op::Add, DType::I32, 8, cols);
    const ir::Symbol r = std::get<ir::For>(std::get<ir::For>(t.routine.body->node).body->node).index;
    t.routine = schedule::apply(t.routine, schedule::split(r, 64, AxisType::Serial, AxisType::WorkgroupReduce));
    const auto* inner = &std::get<ir::For>(std::get<ir::For>(std::get<ir::For>(t.routine.body->node).body->node).body->node);
    ASSERT_TRUE(ir::block_reduction(*inner).has_value()) << ir::print_loop_ir(t.routine);
    EXPECT_TRUE(ir::block_reduction(*inner)->guard.has_value());
    const auto compiled = gpu->compile({t.routine, {t.x, t.s}});
    if (gpu_test::prints_kernels()) {
      EXPECT_NE(compiled->source().find("cannl_red_"), std::string::npos) << "not rendered as a tree:\n" << compiled->source();
    }
    const auto [got, want] = run_both(*gpu, t);
    EXPECT_EQ(got, want) << cols << " columns";
  }
}

// A guard whose slice start is a constant (`if (r < 3)` in a loop of 4) bounds the tree by a
// constant count: no `0 < e` on a constant (compilers warn of a logical && with a constant operand).
TEST(GpuBlockReduction, AConstantGuardBoundsTheTreeByAConstant) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  RowReduction t = row_reduction(ir::Op::Add, DType::I32, 2, 4);
  const auto& rows = std::get<ir::For>(t.routine.body->node);
  const auto& cols = std::get<ir::For>(rows.body->node);
  const auto below = ir::apply(ir::Op::Cmplt, DType::I64, {ir::embed_index(it(cols.index)), ir::constant(3, DType::I64)});
  const auto guarded = ir::for_loop(cols.index, 0, 4, ir::if_then(below, cols.body), AxisType::WorkgroupReduce);
  t.routine.body = ir::for_loop(rows.index, 0, 2, guarded, AxisType::Grid);
  const auto form = ir::block_reduction(std::get<ir::For>(guarded->node));
  ASSERT_TRUE(form.has_value() && form->guard.has_value() && form->guard->before.is_fixed()) << ir::print_loop_ir(t.routine);
  const std::string source = gpu->compile({t.routine, {t.x, t.s}})->source();
  if (gpu_test::prints_kernels()) {
    EXPECT_NE(source.find("cannl_red_"), std::string::npos) << "not rendered as a tree:\n" << source;
  }
  EXPECT_EQ(source.find("&& 0 <"), std::string::npos) << source;
  const auto [got, want] = run_both(*gpu, t);
  EXPECT_EQ(got, want);
}

// A reduction under an If on the block index (`if (i < 5)`: every thread of a block takes it
// alike) stays a tree, barriers inside the If; one under an If that reads memory, which the
// threads might decide apart, runs on the first thread (a barrier there could hang the block).
// Integer sums: every order gives the same bits.
TEST(GpuBlockReduction, UnderAnIfEveryThreadTakesAlikeTheTreeStays) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const bool on_the_block : {true, false}) {
    RowReduction t = row_reduction(ir::Op::Add, DType::I32, 8, 100);
    const auto& rows = std::get<ir::For>(t.routine.body->node);
    const auto condition =
        on_the_block ? ir::apply(ir::Op::Cmplt, DType::I64, {ir::embed_index(it(rows.index)), ir::constant(5, DType::I64)})
                     : ir::apply(ir::Op::Cmplt, DType::I32, {ir::get(t.x, {it(rows.index), ir::AxisIndex::fixed(0)}),
                                                            ir::constant(0, DType::I32)});
    t.routine.body = ir::for_loop(rows.index, 0, 8, ir::if_then(condition, rows.body), AxisType::Grid);
    const std::string source = gpu->compile({t.routine, {t.x, t.s}})->source();
    if (gpu_test::prints_kernels()) {
      EXPECT_EQ(source.find("cannl_red_") != std::string::npos, on_the_block)
          << (on_the_block ? "not rendered as a tree:\n" : "a tree under a divergent If:\n") << source;
    }
    const auto [got, want] = run_both(*gpu, t);
    EXPECT_EQ(got, want) << (on_the_block ? "on the block" : "reading memory");
  }
}

// The other spellings of a sum: the accumulator second (`x + s`) and a sum of products
// (`fma(x, x, s)`, a cross-entropy's targets times log-probabilities). Small integers in f32:
// every order gives the same bits, so a dropped or doubled step shows.
TEST(GpuBlockReduction, SumsWithTheAccumulatorSecondOrAsAnFmaRunAsTrees) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const std::int64_t rows = 8, cols = 100;
  const ir::NodeRef x = ir::make_node("x", DType::F32, {rows, cols}), s = ir::make_node("s", DType::F32, {rows});
  std::vector<float> xs(static_cast<std::size_t>(rows * cols));
  for (std::size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(static_cast<int>((k * 7919) % 41) - 20);
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto cell = ir::get(s, {it(i)}), value = ir::get(x, {it(i), it(r)});
  for (const ir::ScalarRef& sum : {ir::apply(ir::Op::Add, DType::F32, {value, cell}),
                                   ir::apply(ir::Op::Fma, DType::F32, {value, value, cell})}) {
    const ir::StmtRef reduce = ir::for_loop(r, 0, cols, ir::set(s, {it(i)}, sum), AxisType::WorkgroupReduce);
    ASSERT_TRUE(ir::block_reduction(std::get<ir::For>(reduce->node)).has_value());
    const ir::LoweredRoutine routine{"sum", ir::for_loop(i, 0, rows, reduce, AxisType::Grid), {}};
    if (gpu_test::prints_kernels()) {
      EXPECT_NE(gpu->compile({routine, {x, s}})->source().find("cannl_red_"), std::string::npos);
    }
    const auto on_gpu = test_util::run_on(*gpu, {routine, {x, s}}, {test_util::bytes_of(xs), {}});
    const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {routine, {x, s}}, {test_util::bytes_of(xs), {}});
    EXPECT_EQ(on_gpu[1], on_interp[1]);
  }
}

TEST(GpuBlockReduction, TheTreeTakesSharedMemoryInTheGeometry) {
  const RowReduction t = row_reduction(ir::Op::Add, DType::F32, 4, 100);
  const ir::KernelGeometry g = ir::kernel_geometry(t.routine.body);
  EXPECT_EQ(g.block[0], 100);
  EXPECT_GE(g.shared_bytes, 100 * 4);
}

TEST(GpuBlockReduction, AnyOtherFormRunsOnTheFirstThreadInOrder) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  // Two statements per iteration: no tree; the serial loop on thread 0 keeps the exact order.
  const ir::NodeRef x = ir::make_node("x", DType::F32, {8, 50});
  const ir::NodeRef s = ir::make_node("s", DType::F32, {8});
  const ir::NodeRef c = ir::make_node("c", DType::F32, {8});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(i)}), ir::get(x, {it(i), it(r)})});
  const auto count = ir::apply(ir::Op::Add, DType::F32, {ir::get(c, {it(i)}), ir::constant(1, DType::F32)});
  const auto body = ir::for_loop(
      i, 0, 8, ir::for_loop(r, 0, 50, ir::seq({ir::set(s, {it(i)}, sum), ir::set(c, {it(i)}, count)}), AxisType::WorkgroupReduce),
      AxisType::Grid);
  const ir::LoweredRoutine routine{"two_accumulations", body, {}};
  const auto xs = pattern(DType::F32, 400);
  const auto on_gpu = test_util::run_on(*gpu, {routine, {x, s, c}}, {xs, {}, {}});
  const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {routine, {x, s, c}}, {xs, {}, {}});
  EXPECT_EQ(on_gpu[1], on_interp[1]);
  EXPECT_EQ(on_gpu[2], on_interp[2]);
}

// The default GPU schedule puts row maxima and minima on block reductions (a block per row, the
// row in slices of 256 threads): the serial loop's bits on `rows` x `cols` values with NaNs,
// signed zeros, infinities and ties, where any tree that dropped maximumNumber's order would
// differ.
void expect_row_extremes_keep_the_serial_bits(backends::Backend& gpu, std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  const float hard[] = {NAN, -NAN, 0.0f, -0.0f};
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = k % 5 == 0 ? hard[(k / 5) % 4] : std::sin(static_cast<float>(k) * 0.7311f) * 3.0f;
  // Each row's maximum and minimum at the last step of one of its slices (a tree that drops a
  // slice's edge misses them; the last slice's last step where the row ends inside it),
  // infinities in the last rows.
  const std::int64_t slices = (cols + 255) / 256;
  auto slice_end = [&](std::int64_t slice) { return std::min(256 * slice + 255, cols - 1); };
  for (std::int64_t row = 2; row < rows; ++row) {
    v[static_cast<std::size_t>(row * cols + slice_end(row % slices))] = row + 1 < rows ? 10.0f + row : INFINITY;
    v[static_cast<std::size_t>(row * cols + slice_end((row + 1) % slices))] = row + 2 < rows ? -10.0f - row : -INFINITY;
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(cols); ++k) v[k] = k % 2 ? 0.0f : -0.0f;  // row 0: zeros only
  for (std::size_t k = 0; k < static_cast<std::size_t>(cols); ++k) v[cols + k] = k % 3 ? NAN : -NAN;  // row 1: NaNs only
  for (const ir::Op op : {ir::Op::Max, ir::Op::Min}) {
    // The nest of row_reduction with serial loops: the schedule's input.
    const RowReduction t = row_reduction(op, DType::F32, rows, cols);
    const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
    const auto value = ir::apply(op, DType::F32, {ir::get(t.s, {it(i)}), ir::get(t.x, {it(i), it(r)})});
    const ir::LoweredRoutine serial{"row_reduce", ir::for_loop(i, 0, rows, ir::for_loop(r, 0, cols, ir::set(t.s, {it(i)}, value))), {}};
    const ir::LoweredRoutine scheduled = gpu.default_schedule(serial);
    ASSERT_NE(ir::print_loop_ir(scheduled).find("workgroup_reduce"), std::string::npos) << ir::print_loop_ir(scheduled);
    const auto x = test_util::bytes_of(v);
    const auto on_gpu = test_util::run_on(gpu, {scheduled, {t.x, t.s}}, {x, {}});
    const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {serial, {t.x, t.s}}, {x, {}});
    EXPECT_EQ(on_gpu[1], on_interp[1]) << ir::op_name(op);
  }
}

// Rows of 1024 run in four slices of 256; rows of 769 and 1031 (primes) in slices of 256 whose
// last is guarded to its 1 or 7 steps.
TEST(GpuBlockReduction, DefaultScheduleRowMaximaKeepTheSerialBits) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const std::int64_t cols : {1024, 769, 1031}) {
    SCOPED_TRACE(std::to_string(cols) + " columns");
    expect_row_extremes_keep_the_serial_bits(*gpu, 12, cols);
  }
}

// Random row reductions under the default GPU schedule, run on the device: rows of any length
// (primes among them, so the last slice is guarded), one or two reduction loops, block sizes
// from 32 to 256; maxima and minima of f32 values with NaNs and signed zeros, and i32 sums
// (exact in any order), each bitwise the interpreter's serial loop.
TEST(GpuBlockReduction, RandomRowReductionsKeepTheSerialBits) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  std::mt19937_64 rng(2026);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) { return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  int trees = 0;
  for (int round = 0; round < 12 && !HasFailure(); ++round) {
    test_util::ConfigGuard guard;
    const std::int64_t block = std::int64_t{32} << pick(0, 3);
    config::set_override("gpu_schedule_block_size", std::to_string(block));
    const ir::Op op = std::array{ir::Op::Max, ir::Op::Min, ir::Op::Add}[static_cast<std::size_t>(pick(0, 2))];
    const DType dtype = op == ir::Op::Add ? DType::I32 : DType::F32;
    const std::int64_t rows = pick(1, 24), outer = pick(0, 1) == 0 ? 1 : pick(2, 5), cols = pick(65, 1100);
    const ir::NodeRef x = ir::make_node("x", dtype, {rows, outer, cols}), s = ir::make_node("s", dtype, {rows});
    const ir::Symbol i = ir::fresh_symbol(), o = ir::fresh_symbol(), r = ir::fresh_symbol();
    const auto acc = ir::apply(op, dtype, {ir::get(s, {it(i)}), ir::get(x, {it(i), it(o), it(r)})});
    const ir::LoweredRoutine serial{"rows", ir::for_loop(i, 0, rows, ir::for_loop(o, 0, outer, ir::for_loop(r, 0, cols, ir::set(s, {it(i)}, acc)))), {}};
    const ir::LoweredRoutine scheduled = gpu->default_schedule(serial);
    trees += ir::print_loop_ir(scheduled).find("workgroup_reduce") != std::string::npos ? 1 : 0;
    test_util::Bytes xs;
    if (dtype == DType::I32) {
      xs = pattern(dtype, x->num_elements());
    } else {
      std::vector<float> v(static_cast<std::size_t>(x->num_elements()));
      const float hard[] = {NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY};
      for (auto& e : v) e = pick(0, 9) == 0 ? hard[pick(0, 5)] : static_cast<float>(pick(-1000, 1000)) / 7.0f;
      xs = test_util::bytes_of(v);
    }
    const std::string what = std::string(ir::op_name(op)) + " over " + std::to_string(rows) + " x " + std::to_string(outer) +
                             " x " + std::to_string(cols) + ", blocks of " + std::to_string(block) + "\n" + ir::print_loop_ir(scheduled);
    const auto on_gpu = test_util::run_on(*gpu, {scheduled, {x, s}}, {xs, {}});
    const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), {serial, {x, s}}, {xs, {}});
    EXPECT_EQ(on_gpu[1], on_interp[1]) << what;
  }
  EXPECT_GE(trees, 6) << "the default schedule made too few block reductions to test";
}

}  // namespace
}  // namespace cannl
