// The final lowering round: every target decision is in the loop IR afterwards (tiles kept or
// lowered to their nests with their team and zero start, Grid chunks and teams, Vectorized loops
// without a vector form made Serial), an unsound parallel annotation is an InternalError, and
// the interpreter computes the same bits before and after.
#include <gtest/gtest.h>

#include "cannl/ir/lower.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/legality.h"
#include "cannl/schedule/lower_for_target.h"
#include "runtime/test_util.h"
#include "schedule/gpu_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

ir::LoweredRoutine scheduled_matmul(std::int64_t n) {
  using cannl::testing::accum_op;
  using cannl::testing::of;
  const auto a = ir::make_node("a", DType::F32, {n, n});
  const auto b = ir::make_node("b", DType::F32, {n, n});
  const auto c = ir::make_node("c", DType::F32, {n, n});
  const auto comp = cannl::testing::single_accum(
      accum_op(c, ir::Op::Add, ir::Op::Mul, {of(a), of(b)}, cannl::testing::matmul_projections(n, n, n), true));
  CpuScheduleOptions options;
  options.min_tile_work = 1;  // every matmul a tile: the target decides which it runs
  return default_cpu_schedule(ir::lower(comp, "matmul"), options).routine;
}

ir::Target threaded(int vector_bytes, int threads) {
  ir::Target t = ir::cpu_target(vector_bytes);
  t.parallel_runtime = true;
  t.threads = threads;
  return t;
}

TEST(LowerForTarget, TileStartsAtZeroWithTheTeamAndComputesTheSameBits) {
  const ir::LoweredRoutine r = scheduled_matmul(32);
  const ir::LoweredRoutine low = lower_for_target(r, threaded(64, 3));
  const std::string text = ir::print_loop_ir(low);
  EXPECT_TRUE(has(text, "(zero start) (team 3)")) << text;
  EXPECT_FALSE(has(text, "zero_out")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
}

TEST(LowerForTarget, TileIsSerialWithoutAParallelRuntime) {
  const std::string text = ir::print_loop_ir(lower_for_target(scheduled_matmul(32), ir::cpu_target(64)));
  EXPECT_TRUE(has(text, "(zero start)\n")) << text;
  EXPECT_FALSE(has(text, "(team")) << text;
}

// Lowered to its nest: the ZeroOut comes back and the interpreter computes the same bits.
void expect_lowered_to_nest(const ir::LoweredRoutine& r, const ir::Target& target) {
  const ir::LoweredRoutine low = lower_for_target(r, target);
  const std::string text = ir::print_loop_ir(low);
  EXPECT_FALSE(has(text, "tile_mma")) << text;
  EXPECT_TRUE(has(text, "zero_out")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
}

TEST(LowerForTarget, TilesTheTargetCannotRunBecomeTheirNests) {
  const ir::LoweredRoutine small = scheduled_matmul(8);  // 512 multiply-adds < min_tile_work
  ASSERT_TRUE(has(ir::print_loop_ir(small), "tile_mma"));
  expect_lowered_to_nest(small, threaded(64, 2));
  expect_lowered_to_nest(scheduled_matmul(32), threaded(0, 2));  // no SIMD
}

// s[i] = sum_j m[i, j] with the row loop typed `row_axis`, the column loop `col_axis`.
ir::LoweredRoutine row_sum(std::int64_t rows, std::int64_t cols, AxisType row_axis, AxisType col_axis) {
  auto m = ir::make_node("m", DType::F32, {rows, cols});
  auto s = ir::make_node("s", DType::F32, {rows});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const std::vector<AxisIndex> si{AxisIndex::iterator(i)};
  const std::vector<AxisIndex> mij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, si), ir::get(m, mij)});
  return {"row_sum", ir::for_loop(i, 0, rows, ir::for_loop(j, 0, cols, ir::set(s, si, acc), col_axis), row_axis), {}};
}

TEST(LowerForTarget, GridLoopsGetChunksAndTeamOrBecomeSerial) {
  const ir::LoweredRoutine r = row_sum(64, 8, AxisType::Grid, AxisType::Serial);
  ir::Target t = threaded(64, 2);
  t.grid_chunks = 100;
  const std::string chunked = ir::print_loop_ir(lower_for_target(r, t));
  EXPECT_TRUE(has(chunked, "grid chunks 64 team 2:")) << chunked;
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(r, ir::cpu_target(64))), "grid"));
  // A Grid loop inside another runs inside its chunk: serial.
  const std::string nested = ir::print_loop_ir(lower_for_target(row_sum(64, 8, AxisType::Grid, AxisType::Grid), t));
  EXPECT_TRUE(has(nested, "grid chunks 64 team 2:\n  for i1 in [0, 8):")) << nested;
}

TEST(LowerForTarget, RacyGridLoopIsAnInternalErrorNotASerialLoop) {
  const ir::LoweredRoutine racy = row_sum(5, 400, AxisType::Serial, AxisType::Grid);
  try {
    lower_for_target(racy, threaded(64, 2));
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_TRUE(has(e.what(), "validate_parallel")) << e.what();
  }
}

TEST(LowerForTarget, VectorizedLoopsWithoutAVectorFormBecomeSerial) {
  const ir::LoweredRoutine sum = row_sum(3, 1001, AxisType::Serial, AxisType::Vectorized);
  EXPECT_TRUE(has(ir::print_loop_ir(lower_for_target(sum, ir::cpu_target(64))), "vectorized"));
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(sum, ir::cpu_target(0))), "vectorized"));
  // A transposing copy reads m along its rows: no contiguous vector.
  auto m = ir::make_node("m", DType::F32, {40, 40});
  auto t = ir::make_node("t", DType::F32, {40, 40});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const std::vector<AxisIndex> ij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  const std::vector<AxisIndex> ji{AxisIndex::iterator(j), AxisIndex::iterator(i)};
  const ir::LoweredRoutine transpose{
      "transpose", ir::for_loop(i, 0, 40, ir::for_loop(j, 0, 40, ir::set(t, ij, ir::get(m, ji)), AxisType::Vectorized)), {}};
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(transpose, ir::cpu_target(64))), "vectorized"));
}

TEST(LowerForTarget, WorkgroupLoopsRunSeriallyOnACpu) {
  const ir::LoweredRoutine r = row_sum(64, 8, AxisType::Workgroup, AxisType::Serial);
  const ir::LoweredRoutine low = lower_for_target(r, threaded(64, 2));
  EXPECT_FALSE(has(ir::print_loop_ir(low), "workgroup")) << ir::print_loop_ir(low);
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
}

// ---- GPU targets ----

TEST(LowerForTarget, GpuKeepsGridAndWorkgroupLoopsWithoutChunks) {
  const ir::LoweredRoutine r = row_sum(64, 8, AxisType::Grid, AxisType::Serial);
  const std::string text = ir::print_loop_ir(lower_for_target(r, gpu_test_target()));
  EXPECT_TRUE(has(text, "for i0 in [0, 64) grid:\n")) << text;
  const ir::LoweredRoutine w = row_sum(64, 8, AxisType::Workgroup, AxisType::Serial);
  EXPECT_TRUE(has(ir::print_loop_ir(lower_for_target(w, gpu_test_target())), "workgroup"));
}

// x[a, b, c, d] = 1 under four loops of the given types.
ir::LoweredRoutine four_loops(AxisType a_type, AxisType b_type, AxisType c_type, AxisType d_type) {
  const auto x = ir::make_node("x", DType::F32, {2, 3, 4, 5});
  const ir::Symbol a = ir::fresh_symbol(), b = ir::fresh_symbol(), c = ir::fresh_symbol(), d = ir::fresh_symbol();
  const auto store = ir::set(x, {it(a), it(b), it(c), it(d)}, ir::constant(1, DType::F32));
  return {"four", ir::for_loop(a, 0, 2, ir::for_loop(b, 0, 3, ir::for_loop(c, 0, 4, ir::for_loop(d, 0, 5, store, d_type), c_type), b_type), a_type), {}};
}

TEST(LowerForTarget, GpuHardwareLoopsAtMostThreePerKindGridOnlyFromTheTop) {
  const ir::LoweredRoutine chain = lower_for_target(
      four_loops(AxisType::Grid, AxisType::Grid, AxisType::Grid, AxisType::Grid), gpu_test_target());
  const std::string text = ir::print_loop_ir(chain);
  EXPECT_TRUE(has(text, "[0, 2) grid:\n  for i1 in [0, 3) grid:\n    for i2 in [0, 4) grid:\n      for i3 in [0, 5):\n"))
      << text;
  const std::string threads = ir::print_loop_ir(lower_for_target(
      four_loops(AxisType::Workgroup, AxisType::Workgroup, AxisType::Workgroup, AxisType::Workgroup), gpu_test_target()));
  EXPECT_TRUE(has(threads, "[0, 4) workgroup:\n      for i3 in [0, 5):\n")) << threads;
  // Under a serial loop a Grid loop would need a grid-wide barrier between its parent's iterations.
  const std::string under = ir::print_loop_ir(lower_for_target(
      four_loops(AxisType::Serial, AxisType::Grid, AxisType::Serial, AxisType::Workgroup), gpu_test_target()));
  EXPECT_FALSE(has(under, "grid")) << under;
  EXPECT_TRUE(has(under, "[0, 5) workgroup:")) << under;
}

// for g Grid: three Workgroup loops, x[g, j] = a[g, j]; z[g, j] = a[g, j] (touches nothing of x);
// y[g, k] = x[g, 15 - k] (reads cells other threads of the first loop wrote).
ir::LoweredRoutine sibling_thread_loops() {
  const auto a = ir::make_node("a", DType::F32, {4, 16}), x = ir::make_node("x", DType::F32, {4, 16});
  const auto y = ir::make_node("y", DType::F32, {4, 16}), z = ir::make_node("z", DType::F32, {4, 16});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), l = ir::fresh_symbol(), k = ir::fresh_symbol();
  const AxisIndex mirrored{{{-1, k}}, 15};
  const auto body = ir::seq({
      ir::for_loop(j, 0, 16, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup),
      ir::for_loop(l, 0, 16, ir::set(z, {it(g), it(l)}, ir::get(a, {it(g), it(l)})), AxisType::Workgroup),
      ir::for_loop(k, 0, 16, ir::set(y, {it(g), it(k)}, ir::get(x, {it(g), mirrored})), AxisType::Workgroup),
  });
  return {"siblings", ir::for_loop(g, 0, 4, body, AxisType::Grid), {}};
}

// A block runs its threads at once: a barrier goes exactly where a later thread loop reads what
// an earlier one wrote (not between the two independent ones, and not on a CPU).
TEST(LowerForTarget, GpuPutsABarrierBetweenSiblingThreadLoopsThatHandCellsOn) {
  const ir::LoweredRoutine r = sibling_thread_loops();
  const ir::LoweredRoutine low = lower_for_target(r, gpu_test_target());
  const std::string text = ir::print_loop_ir(low);
  const std::size_t barrier = text.find("barrier");
  ASSERT_NE(barrier, std::string::npos) << text;
  EXPECT_EQ(text.find("barrier", barrier + 1), std::string::npos) << text;
  EXPECT_LT(text.find("z["), barrier) << text;
  EXPECT_GT(text.find("y["), barrier) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
  // Lowered again, the barrier already there is enough.
  const std::string again = ir::print_loop_ir(lower_for_target(low, gpu_test_target()));
  EXPECT_EQ(again, text);
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(r, threaded(64, 2))), "barrier"));
}

// `r` (a Grid loop) with its body under `if (condition(g))`.
ir::LoweredRoutine under_an_if(const ir::LoweredRoutine& r, const std::function<ir::ScalarRef(ir::Symbol)>& condition) {
  const auto& grid = std::get<ir::For>(r.body->node);
  return {r.name, ir::for_loop(grid.index, grid.begin, grid.end, ir::if_then(condition(grid.index), grid.body), grid.axis),
          r.statics};
}

// Under an If that every thread of the block decides alike (block indices only) the barrier goes
// inside the If; under one that reads memory, where some threads might skip it, the order cannot
// be kept: a ScheduleError, not a kernel that hangs or races.
TEST(LowerForTarget, GpuOrdersThreadLoopsUnderAnIfOnlyWhereEveryThreadTakesIt) {
  const ir::LoweredRoutine uniform = under_an_if(sibling_thread_loops(), [](ir::Symbol g) {
    return ir::apply(ir::Op::Cmplt, DType::I64, {ir::embed_index(it(g)), ir::constant(3, DType::I64)});
  });
  const ir::LoweredRoutine low = lower_for_target(uniform, gpu_test_target());
  const std::string text = ir::print_loop_ir(low);
  ASSERT_TRUE(has(text, "barrier")) << text;
  EXPECT_LT(text.find("if "), text.find("barrier")) << text;
  EXPECT_EQ(compare(run_interp(uniform), run_interp(low), Tolerance::Bitwise), "");
  validate_parallel(low);
  const auto m = ir::make_node("m", DType::F32, {4});
  const ir::LoweredRoutine by_data = under_an_if(sibling_thread_loops(), [&](ir::Symbol g) {
    return ir::apply(ir::Op::Cmplt, DType::F32, {ir::constant(0, DType::F32), ir::get(m, {it(g)})});
  });
  expect_schedule_error([&] { lower_for_target(by_data, gpu_test_target()); },
                        {"final lowering of routine 'siblings'", "may differ between a block's threads", "need a barrier"});
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(by_data, threaded(64, 2))), "barrier"));
}

// for g Grid: for s in [0, 3): y[g, j] = x[g, 15 - j] (Workgroup j); x[g, k] = y[g, k] (Workgroup
// k): a barrier between the two, and one ending each iteration, whose writes of x the next one
// reads in other threads (PoCL cannot show this one missing: it ends every iteration of a loop
// holding a barrier with one of its own).
TEST(LowerForTarget, GpuEndsASerialLoopsIterationWithABarrierWhenTheNextReadsItsCells) {
  const auto x = ir::make_node("x", DType::F32, {4, 16}), y = ir::make_node("y", DType::F32, {4, 16});
  const ir::Symbol g = ir::fresh_symbol(), s = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const AxisIndex mirrored{{{-1, j}}, 15};
  const auto step = ir::seq({
      ir::for_loop(j, 0, 16, ir::set(y, {it(g), it(j)}, ir::get(x, {it(g), mirrored})), AxisType::Workgroup),
      ir::for_loop(k, 0, 16, ir::set(x, {it(g), it(k)}, ir::get(y, {it(g), it(k)})), AxisType::Workgroup),
  });
  const ir::LoweredRoutine r{"ping_pong", ir::for_loop(g, 0, 4, ir::for_loop(s, 0, 3, step), AxisType::Grid), {}};
  const ir::LoweredRoutine low = lower_for_target(r, gpu_test_target());
  const std::string text = ir::print_loop_ir(low);
  const std::size_t first = text.find("barrier"), second = text.find("barrier", first + 1);
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_EQ(text.find("barrier", second + 1), std::string::npos) << text;
  EXPECT_LT(text.find("y[", 0), first) << text;
  EXPECT_LT(first, text.rfind("x[")) << text;
  EXPECT_GT(second, text.rfind("x[")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
}

// for g Grid: s[g] += a[g, r] over r, then y[g, j, k] = a[g, j] * s[g] over two thread loops: the
// sum outside them runs on the block's first thread (two Workgroup loops of one iteration, one
// per slot the block uses), then a barrier, instead of once per thread.
TEST(LowerForTarget, GpuRunsABlocksWritesOutsideItsThreadLoopsOnItsFirstThread) {
  const auto a = ir::make_node("a", DType::F32, {4, 8}), s = ir::make_node("s", DType::F32, {4});
  const auto y = ir::make_node("y", DType::F32, {4, 8, 2});
  const ir::Symbol g = ir::fresh_symbol(), r = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(g)}), ir::get(a, {it(g), it(r)})});
  const auto scale = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(g), it(j)}), ir::get(s, {it(g)})});
  const auto body = ir::seq({ir::for_loop(r, 0, 8, ir::set(s, {it(g)}, add)),
                             ir::for_loop(j, 0, 8,
                                          ir::for_loop(k, 0, 2, ir::set(y, {it(g), it(j), it(k)}, scale), AxisType::Workgroup),
                                          AxisType::Workgroup)});
  const ir::LoweredRoutine r0{"block_sum", ir::for_loop(g, 0, 4, body, AxisType::Grid), {}};
  const ir::LoweredRoutine low = lower_for_target(r0, gpu_test_target());
  const std::string text = ir::print_loop_ir(low);
  EXPECT_TRUE(has(text, "[0, 1) workgroup:\n    for i2 in [0, 1) workgroup:\n      for i3 in [0, 8):\n        s[i0]"))
      << text;
  EXPECT_LT(text.find("barrier"), text.find("y[")) << text;
  EXPECT_GT(text.find("barrier"), text.find("s[")) << text;
  EXPECT_EQ(compare(run_interp(r0), run_interp(low), Tolerance::Bitwise), "");
  validate_parallel(low);
}

// for g Grid: { v := 0; for t Workgroup: w[g, t] = x[g, t] * 2; for k: { v := v + w[g, k];
// z[g, k] += v } }: the running sum outside the thread loop writes z and sets v, declared beside
// it. Every thread would run it (each needs its copy of v) and add into z once per thread; on the
// first thread only, v would be unset on the others. A ScheduleError naming it (fission raised an
// InternalError "a kernel's write is not under loops of every active hardware slot" before, on a
// schedule apply and validate_parallel accept).
TEST(LowerForTarget, GpuRefusesABlockStatementThatWritesAndSetsALocalOthersRead) {
  const auto x = ir::make_node("x", DType::F32, {4, 8}), w = ir::make_node("w", DType::F32, {4, 8});
  const auto z = ir::make_node("z", DType::F32, {4, 8});
  const ir::Symbol g = ir::fresh_symbol(), t = ir::fresh_symbol(), k = ir::fresh_symbol();
  const int v = ir::fresh_scope_id();
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(g), it(t)}), ir::constant(2, DType::F32)});
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(w, {it(g), it(k)})});
  const auto store = ir::apply(ir::Op::Add, DType::F32, {ir::get(z, {it(g), it(k)}), ir::get_local(v, DType::F32)});
  const auto body = ir::seq({ir::declare_local(v, DType::F32, false), ir::set_local(v, ir::constant(0, DType::F32)),
                             ir::for_loop(t, 0, 8, ir::set(w, {it(g), it(t)}, twice), AxisType::Workgroup),
                             ir::for_loop(k, 0, 8, ir::seq({ir::set_local(v, sum), ir::set(z, {it(g), it(k)}, store)}))});
  const ir::LoweredRoutine r{"running_sum", ir::for_loop(g, 0, 4, body, AxisType::Grid), {}};
  validate_parallel(r);
  expect_schedule_error([&] { lower_for_target(r, gpu_test_target()); },
                        {"final lowering of routine 'running_sum'", "writes nodes and sets a local", "z[", "add(z["});
  // On a CPU the block is one thread: nothing to refuse.
  EXPECT_EQ(compare(run_interp(r), run_interp(lower_for_target(r, threaded(64, 2))), Tolerance::Bitwise), "");
}

// `r` lowered for the GPU test target and split into kernels computes r's bits on the
// interpreter, each kernel race-checked (run_segments); returns the lowered routine's text.
std::string expect_race_free_on_a_gpu(const ir::LoweredRoutine& r) {
  const ir::LoweredRoutine low = lower_for_target(r, gpu_test_target());
  validate_parallel(low);
  EXPECT_EQ(compare(run_interp(r), run_segments(r, fission(low, gpu_test_target())), Tolerance::Bitwise), "");
  return ir::print_loop_ir(low);
}

// A kernel without Grid loops is one block: for s in [0, 3): { t[s] = a[s, 0]; for j Workgroup:
// y[s, j] = a[s, j] * t[s] }. The write of t runs on the first thread, a barrier after it, and
// one ending each iteration, whose next one writes t again (the rule compares nodes, not cells).
TEST(LowerForTarget, GpuOrdersAKernelWithoutGridLoopsAsOneBlock) {
  const auto a = ir::make_node("a", DType::F32, {3, 8}), t = ir::make_node("t", DType::F32, {3});
  const auto y = ir::make_node("y", DType::F32, {3, 8});
  const ir::Symbol s = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto scale = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(s), it(j)}), ir::get(t, {it(s)})});
  const auto body = ir::seq({ir::set(t, {it(s)}, ir::get(a, {it(s), AxisIndex::fixed(0)})),
                             ir::for_loop(j, 0, 8, ir::set(y, {it(s), it(j)}, scale), AxisType::Workgroup)});
  const std::string text = expect_race_free_on_a_gpu({"one_block", ir::for_loop(s, 0, 3, body), {}});
  EXPECT_TRUE(has(text, "[0, 1) workgroup:\n    t[i0]")) << text;
  EXPECT_LT(text.find("t[i0] ="), text.find("barrier")) << text;
  EXPECT_LT(text.find("barrier"), text.find("y[")) << text;
  EXPECT_GT(text.rfind("barrier"), text.find("y[")) << text;
}

// A kernel that is an If around sibling thread loops (no Grid loop: one block) is ordered inside
// the If when every thread decides it alike, and refused when its condition reads memory.
TEST(LowerForTarget, GpuOrdersAKernelThatIsAnIf) {
  const auto a = ir::make_node("a", DType::F32, {8}), x = ir::make_node("x", DType::F32, {8});
  const auto y = ir::make_node("y", DType::F32, {8}), m = ir::make_node("m", DType::F32, {1});
  const ir::Symbol j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto body = ir::seq({ir::for_loop(j, 0, 8, ir::set(x, {it(j)}, ir::get(a, {it(j)})), AxisType::Workgroup),
                             ir::for_loop(k, 0, 8, ir::set(y, {it(k)}, ir::get(x, {AxisIndex{{{-1, k}}, 7}})),
                                          AxisType::Workgroup)});
  const auto always = ir::apply(ir::Op::Cmplt, DType::I64, {ir::constant(0, DType::I64), ir::constant(1, DType::I64)});
  const std::string text = expect_race_free_on_a_gpu({"if_kernel", ir::if_then(always, body), {}});
  ASSERT_TRUE(has(text, "barrier")) << text;
  EXPECT_LT(text.find("if "), text.find("barrier")) << text;
  const auto by_data = ir::apply(ir::Op::Cmplt, DType::F32, {ir::constant(0, DType::F32), ir::get(m, {AxisIndex::fixed(0)})});
  expect_schedule_error([&] { lower_for_target({"if_kernel", ir::if_then(by_data, body), {}}, gpu_test_target()); },
                        {"may differ between a block's threads"});
}

// for g Grid: { x[g, j] = a[g, j] (Workgroup j);  y[g, k, l] = x[g, k] (Workgroup k, l) }: the
// first loop binds slot 0 only, so it runs on the first thread of slot 1 (a one-iteration
// Workgroup loop around it), not once per thread of slot 1.
TEST(LowerForTarget, GpuRunsAShallowerThreadLoopOnTheFirstThreadOfTheOtherSlots) {
  const auto a = ir::make_node("a", DType::F32, {2, 4}), x = ir::make_node("x", DType::F32, {2, 4});
  const auto y = ir::make_node("y", DType::F32, {2, 4, 4});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol(), l = ir::fresh_symbol();
  const auto body = ir::seq(
      {ir::for_loop(j, 0, 4, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup),
       ir::for_loop(k, 0, 4, ir::for_loop(l, 0, 4, ir::set(y, {it(g), it(k), it(l)}, ir::get(x, {it(g), it(l)})), AxisType::Workgroup),
                    AxisType::Workgroup)});
  const std::string text = expect_race_free_on_a_gpu({"slots", ir::for_loop(g, 0, 2, body, AxisType::Grid), {}});
  EXPECT_TRUE(has(text, "[0, 1) workgroup:\n    for i2 in [0, 4) workgroup:\n      x[")) << text;
}

// Inside a thread loop, a statement beside an inner thread loop would need the inner slot's
// threads ordered under the outer loop's guard: the inner thread loops run serially instead.
TEST(LowerForTarget, GpuRunsThreadLoopsSeriallyWhereTheirOuterThreadLoopWouldNeedThemOrdered) {
  const auto a = ir::make_node("a", DType::F32, {3, 3}), t = ir::make_node("t", DType::F32, {3, 3});
  const auto u = ir::make_node("u", DType::F32, {3, 3});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto body = ir::seq(
      {ir::for_loop(r, 0, 3, ir::set(t, {it(i), it(r)}, ir::get(a, {it(r), it(i)}))),
       ir::for_loop(k, 0, 3, ir::set(u, {it(i), it(k)}, ir::apply(ir::Op::Neg, DType::F32, {ir::get(t, {it(i), it(k)})})),
                    AxisType::Workgroup)});
  const std::string text = expect_race_free_on_a_gpu({"nested", ir::for_loop(i, 0, 3, body, AxisType::Workgroup), {}});
  EXPECT_EQ(text.find("workgroup", text.find("workgroup") + 1), std::string::npos) << text;
}

TEST(LowerForTarget, GpuRunsVectorizedLoopsSerially) {
  const ir::LoweredRoutine sum = row_sum(3, 1001, AxisType::Serial, AxisType::Vectorized);
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(sum, gpu_test_target())), "vectorized"));
}

// A GPU blocks the tiles that are launches of their own, the blocking fitted to the tile (16 x 16
// cells: one block of 16 threads); tiles below min_tile_work, tiles a target without blocking
// meets and tiles under a serial loop run as their nests.
TEST(LowerForTarget, GpuBlocksTilesThatAreLaunchesOfTheirOwn) {
  const ir::LoweredRoutine r = scheduled_matmul(16);
  const ir::LoweredRoutine low = lower_for_target(r, gpu_test_target());
  const std::string text = ir::print_loop_ir(low);
  EXPECT_TRUE(has(text, "(zero start) (blocks 16x16x16, threads 4x4)")) << text;
  EXPECT_FALSE(has(text, "zero_out")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(low), Tolerance::Bitwise), "");
  expect_lowered_to_nest(scheduled_matmul(8), gpu_test_target());
  ir::Target unblocked = gpu_test_target();
  unblocked.gpu_tile = {};
  expect_lowered_to_nest(r, unblocked);
  const auto tiles = ir::flatten_seq(r.body);
  const ir::LoweredRoutine under_serial{"under_serial", ir::for_loop(ir::fresh_symbol(), 0, 2, ir::seq(tiles)), {}};
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(under_serial, gpu_test_target())), "tile_mma"));
}

// On a target with asynchronous copies a blocked tile's staging is pipelined (two stages) where
// they fit the device: never for a tile that converts while staging (bf16 tensor cores).
TEST(LowerForTarget, GpuPipelinesTheStagingWhereTheTargetCopiesAsynchronously) {
  const ir::LoweredRoutine r = scheduled_matmul(16);
  ir::Target async = gpu_test_target();
  async.gpu_async_copy = true;
  const std::string text = ir::print_loop_ir(lower_for_target(r, async));
  EXPECT_TRUE(has(text, "(blocks 16x16x16, threads 4x4, 2 stages by async copies)")) << text;
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(r, gpu_test_target())), "async"));
  // Two stages of 16 x 20 cells of a and of b take 5 KB: a device with 4 KB keeps one.
  async.gpu.max_shared_bytes = 4096;
  EXPECT_FALSE(has(ir::print_loop_ir(lower_for_target(r, async)), "async"));
  async.gpu.max_shared_bytes = 49152;
  async.gpu_mma_formats = {ir::NarrowFormat::BF16};
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    if (const auto* t = std::get_if<ir::TileMma>(&s.node)) t->a.node->rounded_to = t->b.node->rounded_to = ir::NarrowFormat::BF16;
  });
  const std::string mma = ir::print_loop_ir(lower_for_target(r, async));
  EXPECT_TRUE(has(mma, "tensor cores bf16)")) << mma;
  async.gpu_mma_formats = {ir::NarrowFormat::TF32};
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    if (const auto* t = std::get_if<ir::TileMma>(&s.node)) t->a.node->rounded_to = t->b.node->rounded_to = ir::NarrowFormat::TF32;
  });
  const std::string tf32 = ir::print_loop_ir(lower_for_target(r, async));
  EXPECT_TRUE(has(tf32, "tensor cores tf32, 2 stages by async copies)")) << tf32;
}

// A tile whose operands are promised exact in bf16 (TensorNode::rounded_to) runs on the
// tensor cores of a target that multiplies bf16 (a TileBlocking::mma blocking fitted to it); not
// when the target has none, when the operands' formats differ, or when the routine writes an
// operand otherwise than with its rounding.
TEST(LowerForTarget, GpuRunsTilesOfRoundedOperandsOnTensorCores) {
  ir::Target mma = gpu_test_target();
  mma.gpu_mma_formats = {ir::NarrowFormat::BF16};
  const auto lowered_text = [&](const ir::LoweredRoutine& r, const ir::Target& t) {
    return ir::print_loop_ir(lower_for_target(r, t));
  };
  const ir::LoweredRoutine r = scheduled_matmul(16);
  std::vector<ir::NodeRef> operands;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    if (const auto* t = std::get_if<ir::TileMma>(&s.node)) operands = {t->a.node, t->b.node};
  });
  ASSERT_EQ(operands.size(), 2u) << ir::print_loop_ir(r);
  EXPECT_FALSE(has(lowered_text(r, mma), "tensor cores")) << "no promise, no tensor cores";
  for (const auto& n : operands) n->rounded_to = ir::NarrowFormat::BF16;
  EXPECT_TRUE(has(lowered_text(r, mma), "(blocks 16x16x16, warps 16x16, tensor cores bf16)")) << lowered_text(r, mma);
  EXPECT_FALSE(has(lowered_text(r, gpu_test_target()), "tensor cores"));
  operands[1]->rounded_to = ir::NarrowFormat::F16;
  EXPECT_FALSE(has(lowered_text(r, mma), "tensor cores"));
  operands[1]->rounded_to = ir::NarrowFormat::BF16;
  // The routine overwrites an operand with a plain copy: its values are not known to be exact.
  const auto fill = [&](const ir::ScalarRef& value) {
    const ir::Symbol p = ir::fresh_symbol(), q = ir::fresh_symbol();
    return ir::for_loop(p, 0, 16, ir::for_loop(q, 0, 16, ir::set(operands[0], {AxisIndex::iterator(p), AxisIndex::iterator(q)}, value)));
  };
  const ir::LoweredRoutine overwritten{"overwritten", ir::seq({fill(ir::constant(0.5, DType::F32)), r.body}), {}};
  EXPECT_FALSE(has(lowered_text(overwritten, mma), "tensor cores"));
  const auto rounded = fill(ir::apply(ir::Op::RoundBf16, DType::F32, {ir::constant(0.5, DType::F32)}));
  const ir::LoweredRoutine rounded_first{"rounded_first", ir::seq({rounded, r.body}), {}};
  EXPECT_TRUE(has(lowered_text(rounded_first, mma), "tensor cores bf16"));
}

}  // namespace
}  // namespace cannl::schedule::testing
