// The default GPU schedule: Grid loops only in a chain from a nest's top, the Workgroup loop
// contiguous in the written node, the block size clamped to the device, the Grid slots within
// the device's limits, reductions and scatter rows serial, matmul-like nests as blocked tiles
// (batch loops on the Grid around them), and the interpreter computing the same bits before
// and after.
#include <gtest/gtest.h>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/legality.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/schedule/trace.h"
#include "schedule/gpu_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

// The launch plans of nests as they stand (matmul-like nests not made tiles).
GpuScheduleOptions options(std::int64_t block_size = 256, std::int64_t min_parallel = 64,
                           ir::GpuLimits limits = cuda_limits()) {
  return {.target = gpu_test_target(limits), .block_size = block_size, .min_parallel = min_parallel, .tiles = false};
}

// The default options: matmul-like nests become blocked tiles.
GpuScheduleOptions tile_options() { return {.target = gpu_test_target()}; }

// The schedule's transforms, recorded as a trace, printed, parsed and replayed onto `r`, make the
// schedule's routine (what the tuner relies on to measure and cache the default).
void expect_replays(const ir::LoweredRoutine& r, const GpuScheduleOptions& o) {
  const ScheduledRoutine plan = plan_default_gpu_schedule(r, o);
  const ScheduleTrace trace = parse_trace(print_trace(record(r, plan.transforms)));
  EXPECT_EQ(ir::print_loop_ir(replay(r, trace)), ir::print_loop_ir(plan.routine)) << print_trace(trace);
}

std::string scheduled(const ir::LoweredRoutine& r, const GpuScheduleOptions& o) {
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  expect_replays(r, o);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Bitwise), "") << ir::print_loop_ir(s);
  validate_parallel(s);
  return ir::print_loop_ir(s);
}

TEST(DefaultGpuSchedule, LongRowsSplitIntoBlocksOfThreadsUnderTheRowGrid) {
  const std::string text = scheduled(Elementwise(8, 600).routine(), options());
  // Rows on grid slot 1, the columns' blocks on slot 0, 256 threads along the contiguous columns.
  EXPECT_TRUE(has(text, "for i0 in [0, 8) grid:\n  for i1 in [0, 3) grid:\n    for i2 in [0, 256) workgroup:\n"
                        "      if lt:i64(index(256*i1 + i2), 600:i64):")) << text;
}

TEST(DefaultGpuSchedule, ShortRowsShareABlockWithTheLoopAbove) {
  // 10 columns: a block of 10 x 25 threads, the rows' outer part on the grid (guarded: 25 does
  // not divide 64).
  const std::string text = scheduled(Elementwise(64, 10).routine(), options());
  EXPECT_TRUE(has(text, "for i0 in [0, 3) grid:\n  for i1 in [0, 25) workgroup:\n")) << text;
  EXPECT_TRUE(has(text, "for i2 in [0, 10) workgroup:")) << text;
}

TEST(DefaultGpuSchedule, ReductionsStaySerialInsideTheirThread) {
  RowSum sum(300, 8);
  const std::string text = scheduled(sum.routine(), options());
  EXPECT_TRUE(has(text, "zero_out s")) << text;
  EXPECT_TRUE(has(text, "for i0 in [0, 2) grid:\n  for i1 in [0, 256) workgroup:")) << text;
  EXPECT_TRUE(has(text, "for i2 in [0, 8):")) << text;  // the reduction, serial
}

TEST(DefaultGpuSchedule, BlockSizeIsClampedToTheDevice) {
  ir::GpuLimits small = cuda_limits();
  small.max_threads_per_block = 128;
  const std::string text = scheduled(Elementwise(4, 1000).routine(), options(4096, 64, small));
  EXPECT_TRUE(has(text, "for i2 in [0, 128) workgroup:")) << text;
  ir::GpuLimits narrow = cuda_limits();
  narrow.max_block_dims[0] = 64;
  EXPECT_TRUE(has(scheduled(Elementwise(4, 1000).routine(), options(4096, 64, narrow)), "for i2 in [0, 64) workgroup:"));
}

TEST(DefaultGpuSchedule, SmallNestsStaySerial) {
  const ir::LoweredRoutine r = Elementwise(4, 8).routine();
  EXPECT_EQ(ir::print_loop_ir(default_gpu_schedule(r, options(256, 64))), ir::print_loop_ir(r));
  EXPECT_TRUE(has(scheduled(r, options(256, 32)), "workgroup"));
}

// db[o] += dy[b, o] over rows b: the reduction loop is on top; the column loop moves up (each
// cell still gets its updates in row order) and is shared out.
TEST(DefaultGpuSchedule, ColumnLoopUnderAReductionMovesUp) {
  const auto dy = ir::make_node("dy", DType::F32, {32, 300});
  const auto db = ir::make_node("db", DType::F32, {300});
  const ir::Symbol b = ir::fresh_symbol(), o = ir::fresh_symbol();
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(db, {it(o)}), ir::get(dy, {it(b), it(o)})});
  const ir::LoweredRoutine r{"bias_grad", ir::for_loop(b, 0, 32, ir::for_loop(o, 0, 300, ir::set(db, {it(o)}, acc))), {}};
  // Too little to share out: the nest stays as it was, its loops in their order.
  EXPECT_EQ(ir::print_loop_ir(default_gpu_schedule(r, options(256, 1000))), ir::print_loop_ir(r));
  const std::string text = scheduled(r, options());
  EXPECT_TRUE(has(text, "for i0 in [0, 2) grid:\n  for i1 in [0, 256) workgroup:\n    if lt:i64(index(256*i0 + i1), 300:i64):\n"
                        "      for i2 in [0, 32):")) << text;
}

// dw[i, j] += x[b, i] * dy[b, j] with the batch loop on top: a weight gradient.
ir::LoweredRoutine weight_gradient() {
  const auto x = ir::make_node("x", DType::F32, {4, 40}), dy = ir::make_node("dy", DType::F32, {4, 30});
  const auto dw = ir::make_node("dw", DType::F32, {40, 30});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(b), it(i)}), ir::get(dy, {it(b), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(dw, {it(i), it(j)}), product});
  const ir::LoweredRoutine r{
      "weight_grad", ir::for_loop(b, 0, 4, ir::for_loop(i, 0, 40, ir::for_loop(j, 0, 30, ir::set(dw, {it(i), it(j)}, acc)))), {}};
  return r;
}

// A weight gradient: the cell loops move above the batch, the contiguous one the threads.
TEST(DefaultGpuSchedule, CellLoopsMoveAboveTheReductions) {
  const ir::LoweredRoutine r = weight_gradient();
  const std::string text = scheduled(r, options(64));
  EXPECT_TRUE(has(text, "for i0 in [0, 20) grid:\n  for i1 in [0, 2) workgroup:\n    for i2 in [0, 30) workgroup:\n"
                        "      for i3 in [0, 4):\n        dw[2*i0 + i1, i2] =")) << text;
}

// t[j, i] = m[i, j]: the loop contiguous in the store (i) becomes the thread loop.
TEST(DefaultGpuSchedule, ThreadLoopIsContiguousInTheStore) {
  const auto m = ir::make_node("m", DType::F32, {300, 6});
  const auto t = ir::make_node("t", DType::F32, {6, 300});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const ir::LoweredRoutine r{
      "transpose", ir::for_loop(i, 0, 300, ir::for_loop(j, 0, 6, ir::set(t, {it(j), it(i)}, ir::get(m, {it(i), it(j)})))), {}};
  const std::string text = scheduled(r, options());
  EXPECT_TRUE(has(text, "for i0 in [0, 6) grid:\n  for i1 in [0, 2) grid:\n    for i2 in [0, 256) workgroup:\n"
                        "      if lt:i64(index(256*i1 + i2), 300:i64):\n        t[i0, 256*i1 + i2] = ")) << text;
}

// A Grid slot over the device's limit (slots 1 and 2 are short on CUDA): fewer Grid loops.
TEST(DefaultGpuSchedule, GridSlotsStayWithinTheDeviceLimits) {
  ir::GpuLimits limits = cuda_limits();
  limits.max_grid_dims = {2147483647, 16, 16};
  const std::string text = scheduled(Elementwise(20, 300).routine(), options(256, 16, limits));
  // Rows (20) would need slot 1: they become the threads, the columns serial in each.
  EXPECT_TRUE(has(text, "for i0 in [0, 20) workgroup:\n  for i1 in [0, 300):")) << text;
  EXPECT_FALSE(has(text, "grid")) << text;
}

// table[?ids[i], j] += g[i, j] (an embedding backward): rows may repeat, so the row loop stays
// serial, in order, inside the column threads.
TEST(DefaultGpuSchedule, LoopsChoosingAScatterRowStaySerial) {
  const auto ids = ir::make_node("ids", DType::F32, {50});
  const auto g = ir::make_node("g", DType::F32, {50, 100});
  const auto table = ir::make_node("table", DType::F32, {8, 100});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto scatter = ir::set_dynamic(table, {AxisIndex::fixed(0), it(j)}, 0, ir::get(ids, {it(i)}),
                                       ir::get(g, {it(i), it(j)}));
  const ir::LoweredRoutine r{"scatter", ir::for_loop(i, 0, 50, ir::for_loop(j, 0, 100, scatter)), {}};
  const std::string text = scheduled(r, options());
  EXPECT_TRUE(has(text, "for i0 in [0, 100) workgroup:\n  for i1 in [0, 50):")) << text;
  // Without the column loop nothing is shared out.
  const auto row = ir::set_dynamic(table, {AxisIndex::fixed(0), AxisIndex::fixed(3)}, 0, ir::get(ids, {it(i)}),
                                   ir::get(g, {it(i), AxisIndex::fixed(3)}));
  const ir::LoweredRoutine rows{"rows", ir::for_loop(i, 0, 50, row), {}};
  EXPECT_EQ(ir::print_loop_ir(default_gpu_schedule(rows, options(256, 1))), ir::print_loop_ir(rows));
}

// The kernels of the scheduled routine with the threads each launches, in launch order.
std::vector<std::int64_t> kernel_threads(const ir::LoweredRoutine& s) {
  const ir::Target target = gpu_test_target(cuda_limits());
  std::vector<std::int64_t> threads;
  for (const Segment& k : fission(lower_for_target(s, target), target))
    if (k.kind == Segment::Kind::Kernel) threads.push_back(k.geometry.threads_per_block() * k.geometry.blocks());
  return threads;
}

// The segments as a GPU may run them compute what the scheduled routine computes on the
// interpreter.
void expect_runs_as_on_a_gpu(const ir::LoweredRoutine& s) {
  const ir::Target target = gpu_test_target(cuda_limits());
  const std::vector<Segment> segments = fission(lower_for_target(s, target), target);
  for (const Order order : {Order::Interpreter, Order::BlocksForward, Order::BlocksReversed})
    EXPECT_EQ(compare(run_interp(s), run_segments(s, segments, order), Tolerance::Bitwise), "") << ir::print_loop_ir(s);
}

// db[o] += dy[b, h, w, o], 6 cells over 16 x 8 x 8 steps (a convolution's bias gradient).
ir::LoweredRoutine conv_bias_grad() {
  const auto dy = ir::make_node("dy", DType::F32, {16, 8, 8, 6});
  const auto db = ir::make_node("db", DType::F32, {6});
  const ir::Symbol b = ir::fresh_symbol(), h = ir::fresh_symbol(), w = ir::fresh_symbol(), o = ir::fresh_symbol();
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(db, {it(o)}), ir::get(dy, {it(b), it(h), it(w), it(o)})});
  return {"conv_bias_grad",
          ir::for_loop(b, 0, 16, ir::for_loop(h, 0, 8, ir::for_loop(w, 0, 8, ir::for_loop(o, 0, 6, ir::set(db, {it(o)}, acc))))),
          {}};
}

// Fewer cells than min_parallel but much work: the cells are still the threads (bitwise).
TEST(DefaultGpuSchedule, FewCellsOfMuchWorkStillShareItOut) {
  const ir::LoweredRoutine r = conv_bias_grad();
  const std::string text = scheduled(r, options());
  EXPECT_TRUE(has(text, "for i0 in [0, 6) workgroup:\n  for i1 in [0, 16):")) << text;
  EXPECT_EQ(kernel_threads(default_gpu_schedule(r, options())), std::vector<std::int64_t>{6});
  // Little work stays on one thread.
  const ir::LoweredRoutine small = Elementwise(4, 8).routine();
  EXPECT_EQ(ir::print_loop_ir(default_gpu_schedule(small, options(256, 64))), ir::print_loop_ir(small));
}

// With the licence the bias gradient's steps go to partials: p[b, h', o] over blocks of the
// reduction (about sqrt(steps) per cell) on many threads, then a second kernel adding them per
// cell in order. Deterministic, re-associated.
TEST(DefaultGpuSchedule, ReassociationStagesFewCellsIntoPartialsOnManyThreads) {
  const ir::LoweredRoutine r = conv_bias_grad();
  GpuScheduleOptions o = options();
  o.reassociate = true;
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  EXPECT_TRUE(has(ir::print_loop_ir(s), "db_partials")) << ir::print_loop_ir(s);
  validate_parallel(s);
  expect_runs_as_on_a_gpu(s);
  // 1024 steps per cell: 16 x 2 partials per cell (b whole, h split in 2); adding them is too
  // little work to share out.
  EXPECT_EQ(kernel_threads(s), (std::vector<std::int64_t>{6 * 16 * 2, 1})) << ir::print_loop_ir(s);
  // A loss sum into one cell: 64 partials of 64 steps each.
  const auto rows = ir::make_node("rows", DType::F32, {4096});
  const auto mean = ir::make_node("mean", DType::F32, {});
  const ir::Symbol b = ir::fresh_symbol();
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(mean, {}), ir::get(rows, {it(b)})});
  const ir::LoweredRoutine loss{"loss", ir::for_loop(b, 0, 4096, ir::set(mean, {}, acc)), {}};
  const ir::LoweredRoutine staged = default_gpu_schedule(loss, o);
  EXPECT_EQ(compare(run_interp(loss), run_interp(staged), Tolerance::Reassociated), "") << ir::print_loop_ir(staged);
  expect_runs_as_on_a_gpu(staged);
  EXPECT_EQ(kernel_threads(staged), (std::vector<std::int64_t>{64, 1})) << ir::print_loop_ir(staged);
  // Without the licence: one thread, the serial loop's bits.
  EXPECT_EQ(ir::print_loop_ir(default_gpu_schedule(loss, options())), ir::print_loop_ir(loss));
}

// dx[b, h + kh, w + kw, c] += dy[b, h, w, o] * k[o, kh, kw, c] (a convolution's input gradient):
// the store is not injective in h, kh, w, kw, but b and c index it alone: they move above the
// others into the parallel chain (each cell's updates keep their order: bitwise).
// dx[b, h + kh, w + kw, c] += dy[b, h, w, o] * k[o, kh, kw, c]: a stride-1 convolution's input
// gradient, by default of 2 images of 4 x 4 x 4 and a 3 x 3 window over 4 channels.
ir::LoweredRoutine conv_input_grad(std::int64_t batch = 2, std::int64_t side = 4, std::int64_t outs = 4,
                                   std::int64_t window = 3, std::int64_t ins = 4) {
  const std::int64_t in_side = side + window - 1;
  const auto dy = ir::make_node("dy", DType::F32, {batch, side, side, outs});
  const auto k = ir::make_node("k", DType::F32, {outs, window, window, ins});
  const auto dx = ir::make_node("dx", DType::F32, {batch, in_side, in_side, ins});
  const ir::Symbol b = ir::fresh_symbol(), h = ir::fresh_symbol(), w = ir::fresh_symbol(), o = ir::fresh_symbol();
  const ir::Symbol kh = ir::fresh_symbol(), kw = ir::fresh_symbol(), c = ir::fresh_symbol();
  const std::vector<AxisIndex> at{it(b), AxisIndex{{{1, h}, {1, kh}}, 0}, AxisIndex{{{1, w}, {1, kw}}, 0}, it(c)};
  const auto product =
      ir::apply(ir::Op::Mul, DType::F32, {ir::get(dy, {it(b), it(h), it(w), it(o)}), ir::get(k, {it(o), it(kh), it(kw), it(c)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(dx, at), product});
  ir::StmtRef nest = ir::set(dx, at, acc);
  for (const auto& [s, n] : std::vector<std::pair<ir::Symbol, std::int64_t>>{
           {c, ins}, {kw, window}, {kh, window}, {o, outs}, {w, side}, {h, side}, {b, batch}})
    nest = ir::for_loop(s, 0, n, nest);
  return {"conv_input_grad", nest, {}};
}

TEST(DefaultGpuSchedule, ConvolutionInputGradientSharesOutItsBatchAndChannelLoops) {
  const ir::LoweredRoutine r = conv_input_grad();
  const std::string text = scheduled(r, options(256, 16));
  const ir::LoweredRoutine s = default_gpu_schedule(r, options(256, 16));
  expect_runs_as_on_a_gpu(s);
  EXPECT_EQ(kernel_threads(s), std::vector<std::int64_t>{2 * 4}) << text;
  // A block of 2 x 4 threads, each running its cells' updates in the original order.
  EXPECT_TRUE(has(text, "for i0 in [0, 2) workgroup:\n  for i1 in [0, 4) workgroup:\n    for i2 in [0, 4):\n      for i3 in [0, 4):\n"
                        "        for i4 in [0, 4):")) << text;
}

// With the licence the input gradient sums the output channels into p[b, h, kh, w, kw, c] first,
// one thread per cell, then adds p into dx with b and c on threads.
TEST(DefaultGpuSchedule, ReassociationStagesAConvolutionInputGradientOverEveryCellLoop) {
  const ir::LoweredRoutine r = conv_input_grad();
  GpuScheduleOptions o = options(256, 16);
  o.reassociate = true;
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  EXPECT_TRUE(has(ir::print_loop_ir(s), "dx_partials")) << ir::print_loop_ir(s);
  validate_parallel(s);
  expect_runs_as_on_a_gpu(s);
  const std::vector<std::int64_t> threads = kernel_threads(s);
  ASSERT_EQ(threads.size(), 2u) << ir::print_loop_ir(s);
  EXPECT_GE(threads[0], 2 * 4 * 4 * 3 * 3) << ir::print_loop_ir(s);  // at least b, h, w, kh, kw
  EXPECT_EQ(threads[1], 2 * 4) << ir::print_loop_ir(s);
}

// Many cells (more than 16 blocks' worth) each over at least 4096 steps (a convolution's weight
// gradient over a batch of images): staged too, about sqrt(steps) partials per cell.
TEST(DefaultGpuSchedule, ReassociationStagesVeryLongReductionsOfManyCells) {
  const auto x = ir::make_node("x", DType::F32, {4096, 5}), dy = ir::make_node("dy", DType::F32, {4096, 8});
  const auto dw = ir::make_node("dw", DType::F32, {5, 8});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(b), it(i)}), ir::get(dy, {it(b), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(dw, {it(i), it(j)}), product});
  const ir::LoweredRoutine r{
      "weight_grad", ir::for_loop(b, 0, 4096, ir::for_loop(i, 0, 5, ir::for_loop(j, 0, 8, ir::set(dw, {it(i), it(j)}, acc)))), {}};
  GpuScheduleOptions o = options(2, 16);  // 40 cells: more than 16 blocks of 2 threads
  o.reassociate = true;
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  validate_parallel(s);
  EXPECT_EQ(kernel_threads(s), (std::vector<std::int64_t>{64 * 40, 40})) << ir::print_loop_ir(s);
  // Without the licence: the bitwise schedule, a thread per cell.
  o.reassociate = false;
  EXPECT_EQ(kernel_threads(default_gpu_schedule(r, o)), std::vector<std::int64_t>{40});
}

// The tile of a scheduled routine, lowered for the test GPU (nullptr when there is none).
const ir::TileMma* lowered_tile(const ir::LoweredRoutine& low) {
  const ir::TileMma* found = nullptr;
  ir::for_each_stmt(low.body, [&](const ir::Stmt& x) {
    if (const auto* t = std::get_if<ir::TileMma>(&x.node)) found = t;
  });
  return found;
}

// c = a b (zeroed first): one blocked tile starting at zero, a launch of its own with two 64 x 64
// blocks of 256 threads in 2-step slices; run as a GPU may, the same bits.
TEST(DefaultGpuSchedule, AMatmulBecomesABlockedTileOfItsOwnLaunch) {
  const Matmul mm(70, 33, 2);
  const ir::LoweredRoutine s = default_gpu_schedule(mm.routine(), tile_options());
  const ir::Target target = gpu_test_target();
  const ir::LoweredRoutine low = lower_for_target(s, target);
  const ir::TileMma* tile = lowered_tile(low);
  ASSERT_NE(tile, nullptr) << ir::print_loop_ir(s);
  EXPECT_EQ(tile->blocking, (ir::TileBlocking{64, 64, 2, 4, 4}));
  EXPECT_TRUE(tile->zero_start) << ir::print_loop_ir(low);
  const std::vector<Segment> segments = fission(low, target);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{2, 1, 1}));
  EXPECT_EQ(segments[0].geometry.block, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(segments[0].geometry.shared_bytes, (65 + 65) * 2 * 4);
  expect_runs_as_on_a_gpu(s);
  expect_replays(mm.routine(), tile_options());
  // Without tiles: a thread per cell, as before.
  EXPECT_EQ(lowered_tile(lower_for_target(default_gpu_schedule(mm.routine(), options()), target)), nullptr);
}

// d[b, i, j] += x[b, i, k] * w[b, k, j]: the batch stays outside the tile as a Grid loop (slot 1).
TEST(DefaultGpuSchedule, ABatchedMatmulKeepsItsBatchOnTheGrid) {
  const auto x = ir::make_node("x", DType::F32, {2, 32, 4}), w = ir::make_node("w", DType::F32, {2, 4, 32});
  const auto d = ir::make_node("d", DType::F32, {2, 32, 32});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(b), it(i), it(k)}), ir::get(w, {it(b), it(k), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(d, {it(b), it(i), it(j)}), product});
  const ir::LoweredRoutine r{
      "batched", ir::for_loop(b, 0, 2, ir::for_loop(i, 0, 32, ir::for_loop(j, 0, 32, ir::for_loop(k, 0, 4, ir::set(d, {it(b), it(i), it(j)}, acc))))), {}};
  const std::string text = scheduled(r, tile_options());
  EXPECT_TRUE(has(text, "for i0 in [0, 2) grid:\n  tile_mma")) << text;
  const ir::LoweredRoutine s = default_gpu_schedule(r, tile_options());
  const std::vector<Segment> segments = fission(lower_for_target(s, gpu_test_target()), gpu_test_target());
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].geometry.grid, (std::array<std::int64_t, 3>{1, 2, 1}));
  expect_runs_as_on_a_gpu(s);
}

// Too little work (fewer multiply-adds than min_tile_work) or too few cells for a block of a
// warp's threads (a matrix-vector product): the plain launch plan.
TEST(DefaultGpuSchedule, SmallAndSkinnyMatmulsStayPlain) {
  EXPECT_FALSE(has(scheduled(Matmul(8, 8, 8).routine(), tile_options()), "tile_mma"));
  const std::string gemv = scheduled(Matmul(4096, 1, 2).routine(), tile_options());
  EXPECT_FALSE(has(gemv, "tile_mma")) << gemv;
  EXPECT_TRUE(has(gemv, "workgroup")) << gemv;
}

// A weight gradient dw[i, j] += x[b, i] * dy[b, j] (the batch a reduction outside i, j): one tile
// whose steps are the batch, bitwise.
TEST(DefaultGpuSchedule, AWeightGradientBecomesATileOverTheBatch) {
  const ir::LoweredRoutine r = weight_gradient();
  const std::string text = scheduled(r, tile_options());
  EXPECT_TRUE(has(text, "tile_mma")) << text;
  expect_runs_as_on_a_gpu(default_gpu_schedule(r, tile_options()));
}

// With the licence, an input gradient whose zero border at most doubles the work (LeNet's second
// convolution: 10 x 10 outputs of 5 x 5 windows, 14 x 14 inputs) is the transposed convolution:
// a thread per cell of dx, not partials whose sum shares out the batch and channels only.
TEST(DefaultGpuSchedule, ReassociationGathersAConvolutionInputGradientAsTheTransposedConvolution) {
  const ir::LoweredRoutine r = conv_input_grad(1, 10, 3, 5, 2);
  GpuScheduleOptions o = tile_options();
  o.reassociate = true;
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  const std::string text = ir::print_loop_ir(s);
  EXPECT_TRUE(has(text, "dy_windowed")) << text;
  EXPECT_FALSE(has(text, "dx_partials")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << text;
  validate_parallel(s);
  expect_runs_as_on_a_gpu(s);
  // The copy into the bordered operand (a thread per cell of dy), then a thread per cell of dx.
  EXPECT_EQ(kernel_threads(s), (std::vector<std::int64_t>{10 * 10 * 3, 14 * 14 * 2})) << text;
  // A border that more than doubles the work (3 x 3 outputs of 5 x 5 windows) is staged instead.
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(conv_input_grad(2, 3, 3, 5, 2), o)), "_windowed"));
}

// dw[i, j] += x[b, i] * dy[b, j] over `tokens` steps: a weight gradient.
ir::LoweredRoutine weight_gradient_of(std::int64_t tokens, std::int64_t rows, std::int64_t cols) {
  const auto x = ir::make_node("x", DType::F32, {tokens, rows}), dy = ir::make_node("dy", DType::F32, {tokens, cols});
  const auto dw = ir::make_node("dw", DType::F32, {rows, cols});
  const ir::Symbol b = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(b), it(i)}), ir::get(dy, {it(b), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(dw, {it(i), it(j)}), product});
  return {"weight_grad",
          ir::for_loop(i, 0, rows, ir::for_loop(j, 0, cols, ir::for_loop(b, 0, tokens, ir::set(dw, {it(i), it(j)}, acc)))),
          {}};
}

// dw[i, j] += x[b, q, i] * dy[b, q, j]: a weight gradient over tokens as batch x sequence loops
// (the batch loop outermost, the sequence innermost).
ir::LoweredRoutine batch_sequence_weight_gradient(std::int64_t batch, std::int64_t seq, std::int64_t rows, std::int64_t cols) {
  const auto x = ir::make_node("x", DType::F32, {batch, seq, rows}), dy = ir::make_node("dy", DType::F32, {batch, seq, cols});
  const auto dw = ir::make_node("dw", DType::F32, {rows, cols});
  const ir::Symbol b = ir::fresh_symbol(), q = ir::fresh_symbol(), i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(b), it(q), it(i)}), ir::get(dy, {it(b), it(q), it(j)})});
  const auto acc = ir::apply(ir::Op::Add, DType::F32, {ir::get(dw, {it(i), it(j)}), product});
  const auto nest = ir::for_loop(i, 0, rows, ir::for_loop(j, 0, cols, ir::for_loop(q, 0, seq, ir::set(dw, {it(i), it(j)}, acc))));
  return {"weight_grad_bs", ir::for_loop(b, 0, batch, nest), {}};
}

// The partials dw_partials holds for each of dw's `cells` (0: not staged).
std::int64_t partials_per_cell(const ir::LoweredRoutine& s, std::int64_t cells) {
  for (const ir::NodeRef& n : ir::nodes_of(s.body))
    if (n->debug_name() == "dw_partials") return n->num_elements() / cells;
  return 0;
}

// Licensed options for a CUDA-like device of `units` compute units.
GpuScheduleOptions licensed_on(std::int64_t units) {
  ir::GpuLimits limits = cuda_limits();
  limits.compute_units = units;
  return {.target = gpu_test_target(limits), .reassociate = true};
}

// A batch x sequence weight gradient of 32 x 32 cells on one unit split along K into `chunks`
// partials a cell, the batch's last entry peeled into a pass of its own: a legal plan that
// replays.
void expect_peeled_split_k(std::int64_t batch, std::int64_t seq, std::int64_t chunks) {
  const GpuScheduleOptions o = licensed_on(1);
  const ir::LoweredRoutine r = batch_sequence_weight_gradient(batch, seq, 32, 32);
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  const std::string text = ir::print_loop_ir(s);
  EXPECT_EQ(partials_per_cell(s, 32 * 32), chunks) << text;
  EXPECT_TRUE(has(text, "in [" + std::to_string(batch - 1) + ", " + std::to_string(batch) + ")")) << text;
  validate_parallel(s);
  expect_replays(r, o);
}

// An elementwise nest the device stays full with at a thread per vector (64 x 1024 cells, 16384
// vectors for a unit's 2048 resident threads) runs 4 lanes a thread: its contiguous loop split
// into a Vectorized loop of 4, which the GPU lowering keeps (ir::gpu_vector_loop); bitwise the
// serial nest. A nest too small to fill the device keeps a thread per cell unless the vectors
// are asked for (gpu_schedule_vectors=on), as does any with gpu_schedule_vectors=off.
TEST(DefaultGpuSchedule, ElementwiseNestsThatFillTheDeviceRunFourLanesAThread) {
  ir::GpuLimits one = cuda_limits();
  one.compute_units = 1;
  GpuScheduleOptions o = options(256, 64, one);
  const ir::LoweredRoutine r = Elementwise(64, 1024).routine();
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  const std::string text = ir::print_loop_ir(s);
  EXPECT_TRUE(has(text, "in [0, 4) vectorized")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Bitwise), "") << text;
  validate_parallel(s);
  expect_replays(r, o);
  const ir::LoweredRoutine lowered = lower_for_target(s, o.target);
  EXPECT_TRUE(has(ir::print_loop_ir(lowered), "vectorized")) << ir::print_loop_ir(lowered);
  const ir::LoweredRoutine small = Elementwise(4, 1024).routine();  // 1024 vectors
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(small, o)), "vectorized"));
  o.vectors = GpuScheduleOptions::Vectors::On;
  EXPECT_TRUE(has(ir::print_loop_ir(default_gpu_schedule(small, o)), "vectorized"));
  o.vectors = GpuScheduleOptions::Vectors::Off;
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(r, o)), "vectorized"));
}

// A weight gradient of 32 x 32 cells over 256 tokens on a device of one unit: its tile would
// have 1 block at the smallest blocking, fewer than 4 per unit; split-K stages 2 chunks of the
// tokens into partials (a batched tile, the chunks on the Grid) and adds them in order. Without
// the licence, or with enough blocks per unit, the tile stays whole.
TEST(DefaultGpuSchedule, ReassociationSplitsTheTokensOfAWeightGradientWithFewBlocks) {
  ir::GpuLimits small = cuda_limits();
  small.compute_units = 1;
  GpuScheduleOptions o{.target = gpu_test_target(small), .reassociate = true};
  const ir::LoweredRoutine r = weight_gradient_of(256, 32, 32);
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  const std::string text = ir::print_loop_ir(s);
  EXPECT_TRUE(has(text, "dw_partials")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << text;
  validate_parallel(s);
  expect_replays(r, o);
  const std::vector<std::int64_t> threads = kernel_threads(s);
  ASSERT_EQ(threads.size(), 2u) << text;
  EXPECT_EQ(threads[1], 32 * 32) << text;  // a thread per cell adds the chunks
  o.reassociate = false;
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(r, o)), "_partials"));
  o.reassociate = true;
  o.split_k_blocks_per_unit = 0;  // gpu_split_k_blocks_per_unit=0: no split-K
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(r, o)), "_partials"));
  o.split_k_blocks_per_unit = 4;
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(weight_gradient_of(256, 64, 64), o)), "_partials"));
  // Tokens as batch x sequence loops (dw[i, j] += x[b, s, i] * dy[b, s, j]): the chunks are the
  // batch loop's iterations, each over its whole sequence.
  {
    const ir::LoweredRoutine two = batch_sequence_weight_gradient(2, 128, 32, 32);
    const ir::LoweredRoutine split_two = default_gpu_schedule(two, o);
    EXPECT_TRUE(has(ir::print_loop_ir(split_two), "dw_partials")) << ir::print_loop_ir(split_two);
    validate_parallel(split_two);
    expect_replays(two, o);
    EXPECT_EQ(kernel_threads(split_two).size(), 2u) << ir::print_loop_ir(split_two);
  }
  // Chunks of fewer than 128 tokens are not worth a pass of their own.
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(weight_gradient_of(200, 32, 32), o)), "_partials"));
}

// Few cells over many steps (32 x 64 cells over 16 x 256 tokens as batch and sequence loops):
// stage_partials' partials (64 a cell, about sqrt(steps)) fill the device better than split-K's
// chunks (at most 8), so split-K leaves such nests to it (cifar_conv's first weight gradient
// went from 16001 steps a thread as chunks to 401 as partials in the census).
TEST(DefaultGpuSchedule, FewCellsOverManyStepsAreStagedNotSplitIntoChunks) {
  // 132 units (an H200): 2 blocks of 32 x 32 cells, so split-K would want chunks.
  const ir::LoweredRoutine s = default_gpu_schedule(batch_sequence_weight_gradient(16, 256, 32, 64), licensed_on(132));
  EXPECT_EQ(partials_per_cell(s, 32 * 64), 64) << ir::print_loop_ir(s);
  validate_parallel(s);
}

// A reduction no chunk count divides (257 tokens, a prime; GPT-2's vocabulary of 50257 = 29 x
// 1733 in its LM head's input gradient): its last step is peeled into a nest of its own, added
// after the 2 chunks of 128 tokens; the same sum within the re-association's tolerance, and a
// trace that replays (the segments' loops minted by the plan).
TEST(DefaultGpuSchedule, SplitKPeelsTheStepsNoChunkCountDivides) {
  ir::GpuLimits small = cuda_limits();
  small.compute_units = 1;
  GpuScheduleOptions o{.target = gpu_test_target(small), .reassociate = true};
  const ir::LoweredRoutine r = weight_gradient_of(257, 32, 32);
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  const std::string text = ir::print_loop_ir(s);
  EXPECT_TRUE(has(text, "dw_partials")) << text;
  EXPECT_TRUE(has(text, "in [256, 257)")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << text;
  validate_parallel(s);
  expect_replays(r, o);
  // The chunks' tile, then one kernel (a thread per cell) adding the chunks and the peeled step.
  const std::vector<std::int64_t> threads = kernel_threads(s);
  ASSERT_EQ(threads.size(), 2u) << text;
  EXPECT_EQ(threads[1], 32 * 32) << text;
}

// The peel sizes its tail against the chunks it then makes: 17 x 32 tokens on a device of one
// unit (32 x 32 cells, 1 block where 4 are wanted: 4 chunks asked for) peel the 17th batch
// entry against 2 chunks of 8 (4 chunks of 4 would leave a tail of a quarter chunk), and the
// head is split into exactly those 2, not into the 4 its 16 entries would allow on their own.
// (The peel's sums against the interpreter: SplitKPeelsTheStepsNoChunkCountDivides, and on
// PoCL GpuTile.SplitKWithAPeeledStepIsBitwiseItsSchedule.)
TEST(DefaultGpuSchedule, SplitKSplitsThePeeledHeadIntoTheChunksItsTailWasSizedAgainst) {
  expect_peeled_split_k(17, 32, 2);
}

// Few cells over many steps are left to stage_partials only where it stages them: a batch of 67
// (a prime over sqrt(67 x 16) = 32, the most partials a cell would get) leaves it nothing to
// split, so split-K takes the nest: 3 chunks of 22 entries and the 67th peeled.
TEST(DefaultGpuSchedule, FewCellsThatPartialsCannotStageAreSplitAlongK) {
  expect_peeled_split_k(67, 16, 3);
}

// On tensor cores a tile keeps its MMA blocks (128 x 128 cells), so split-K counts those: a
// weight gradient of 256 x 256 cells over 1024 tokens of bf16-rounded operands has 64 blocks of
// 32 x 32 on a device of 4 units (enough) but 4 MMA blocks (too few), and is split. The same
// nest on unrounded operands runs as a scalar tile and is not.
TEST(DefaultGpuSchedule, TensorCoreTilesAreSplitByTheirOwnBlocks) {
  ir::GpuLimits four = cuda_limits();
  four.compute_units = 4;
  GpuScheduleOptions o{.target = gpu_test_target(four), .reassociate = true};
  o.target.gpu_mma_formats = {ir::NarrowFormat::BF16};
  ASSERT_TRUE(o.target.gpu_mma_tile.blocked());
  const ir::LoweredRoutine scalar = weight_gradient_of(1024, 256, 256);
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(scalar, o)), "_partials"));
  const ir::LoweredRoutine rounded = weight_gradient_of(1024, 256, 256);
  for (const ir::NodeRef& n : ir::nodes_of(rounded.body))
    if (n->debug_name() != "dw") n->rounded_to = ir::NarrowFormat::BF16;
  const ir::LoweredRoutine s = default_gpu_schedule(rounded, o);
  EXPECT_TRUE(has(ir::print_loop_ir(s), "dw_partials")) << ir::print_loop_ir(s);
  validate_parallel(s);
}

namespace row_reductions {

// How many WorkgroupReduce loops `r` has, each in the form the GPU renders as a tree (the
// interpreter runs them serially: this is what says the schedule reduces on blocks); -1 when one
// is not.
int tree_reductions(const ir::LoweredRoutine& r) {
  int trees = 0;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
    const auto* f = std::get_if<ir::For>(&s.node);
    if (f == nullptr || f->axis != ir::AxisType::WorkgroupReduce || trees < 0) return;
    trees = ir::block_reduction(*f) ? trees + 1 : -1;
  });
  return trees;
}

// m[r] = accum(m[r], x[r, c]) over `cols` steps for each of `rows` rows.
ir::LoweredRoutine row_reduction(ir::Op accum, std::int64_t rows, std::int64_t cols) {
  const auto x = ir::make_node("x", DType::F32, {rows, cols});
  const auto m = ir::make_node("m", DType::F32, {rows});
  const ir::Symbol r = ir::fresh_symbol(), c = ir::fresh_symbol();
  const auto acc = ir::apply(accum, DType::F32, {ir::get(m, {it(r)}), ir::get(x, {it(r), it(c)})});
  return {"row_reduction", ir::for_loop(r, 0, rows, ir::for_loop(c, 0, cols, ir::set(m, {it(r)}, acc))), {}};
}

// A row maximum (a softmax's or a cross-entropy's): one block per row, each of its 256 threads
// folding its strided steps of the row's 4 slices, then one block reduction of the partials (the
// bits of the serial loop: checked on OpenCL in tests/gpu/gpu_block_reduction_test.cpp, the
// emulation here runs no reductions).
TEST(DefaultGpuSchedule, RowMaximaRunAsBlockReductionsBitwise) {
  const ir::LoweredRoutine r = row_reduction(ir::Op::Max, 40, 1024);
  const std::string text = scheduled(r, options());
  EXPECT_TRUE(has(text, "for i0 in [0, 40) grid:\n  for i1 in [0, 256) workgroup_reduce:\n    for i2 in [0, 4):\n"
                        "      m[i0] = max(m[i0], x[i0, 256*i2 + i1])"))
      << text;
  EXPECT_EQ(tree_reductions(default_gpu_schedule(r, options())), 1);
  EXPECT_EQ(kernel_threads(default_gpu_schedule(r, options())), std::vector<std::int64_t>{40 * 256});
  // A row no longer than a block takes one reduction; a minimum alike.
  const std::string short_rows = scheduled(row_reduction(ir::Op::Min, 40, 100), options());
  EXPECT_TRUE(has(short_rows, "for i0 in [0, 40) grid:\n  for i1 in [0, 100) workgroup_reduce:")) << short_rows;
}

// A row sum re-associates: only with the licence, and only over long rows.
TEST(DefaultGpuSchedule, RowSumsRunAsBlockReductionsOnlyWithTheLicence) {
  const ir::LoweredRoutine r = row_reduction(ir::Op::Add, 40, 512);
  GpuScheduleOptions o = options();
  EXPECT_FALSE(has(scheduled(r, o), "workgroup_reduce")) << scheduled(r, o);
  o.reassociate = true;
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  EXPECT_TRUE(has(ir::print_loop_ir(s), "for i1 in [0, 256) workgroup_reduce:\n    for i2 in [0, 2):"))
      << ir::print_loop_ir(s);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  validate_parallel(s);
  EXPECT_FALSE(has(ir::print_loop_ir(default_gpu_schedule(row_reduction(ir::Op::Add, 80, 128), o)), "workgroup_reduce"));
  // Fewer cells than min_parallel (a bias gradient's): 64 steps suffice, else one thread.
  const std::string bias = ir::print_loop_ir(default_gpu_schedule(row_reduction(ir::Op::Add, 10, 64), o));
  EXPECT_TRUE(has(bias, "for i0 in [0, 10) grid:\n  for i1 in [0, 64) workgroup_reduce:")) << bias;
}

// A row no divisor of which fills half a block (a vocabulary of 50257 = 29 x 1733, here the prime
// 1031) runs in slices of a whole block, the last guarded (inside each thread's strided steps):
// the maximum bitwise, a licensed sum within re-association of the serial loop.
TEST(DefaultGpuSchedule, RowsABlockDoesNotDivideEndInAGuardedSlice) {
  const std::string text = scheduled(row_reduction(ir::Op::Max, 40, 1031), options());
  EXPECT_TRUE(has(text, "for i0 in [0, 40) grid:\n  for i1 in [0, 256) workgroup_reduce:\n    for i2 in [0, 5):\n"
                        "      if lt:i64(index(256*i2 + i1), 1031:i64):"))
      << text;
  GpuScheduleOptions o = options();
  o.reassociate = true;
  const ir::LoweredRoutine r = row_reduction(ir::Op::Add, 3, 1031);
  const ir::LoweredRoutine s = default_gpu_schedule(r, o);
  EXPECT_EQ(tree_reductions(s), 1) << ir::print_loop_ir(s);
  EXPECT_EQ(tree_reductions(default_gpu_schedule(row_reduction(ir::Op::Max, 40, 1031), options())), 1);
  EXPECT_EQ(compare(run_interp(r), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  validate_parallel(s);
  // A divisor filling half a block keeps exact slices: 1000 = 4 x 250.
  EXPECT_TRUE(has(scheduled(row_reduction(ir::Op::Max, 40, 1000), options()), "for i1 in [0, 250) workgroup_reduce:\n    for i2 in [0, 4):\n      m["));
}

// m[c] = accum(m[c], x[c, r0, r1, ..]) over the reduction loops of `extents` for `cells` cells.
ir::LoweredRoutine multi_loop_reduction(ir::Op accum, std::int64_t cells, const std::vector<std::int64_t>& extents) {
  std::vector<std::int64_t> dims{cells};
  dims.insert(dims.end(), extents.begin(), extents.end());
  const auto x = ir::make_node("x", DType::F32, dims);
  const auto m = ir::make_node("m", DType::F32, {cells});
  const ir::Symbol c = ir::fresh_symbol();
  std::vector<ir::Symbol> loops;
  std::vector<AxisIndex> at{it(c)};
  for (std::size_t k = 0; k < extents.size(); ++k) {
    loops.push_back(ir::fresh_symbol());
    at.push_back(it(loops.back()));
  }
  const auto acc = ir::apply(accum, DType::F32, {ir::get(m, {it(c)}), ir::get(x, at)});
  ir::StmtRef body = ir::set(m, {it(c)}, acc);
  for (std::size_t k = extents.size(); k-- > 0;) body = ir::for_loop(loops[k], 0, extents[k], body);
  return {"reduction", ir::for_loop(c, 0, cells, body), {}};
}

// A bias gradient's partials (one per image and row chunk) added into its 6 cells.
ir::LoweredRoutine two_loop_reduction(ir::Op accum) { return multi_loop_reduction(accum, 6, {64, 2}); }

// A reduction over two loops takes its longer loop onto the block's threads, each thread walking
// the shorter one before one tree per cell, instead of one thread per cell walking all 128
// steps: a sum with the licence (within re-association of the serial loop), a maximum without
// (bitwise).
TEST(DefaultGpuSchedule, ReductionsOverSeveralLoopsPutTheLongestOnTheThreads) {
  GpuScheduleOptions o = options();
  o.reassociate = true;
  const ir::LoweredRoutine sum = two_loop_reduction(ir::Op::Add);
  const ir::LoweredRoutine s = default_gpu_schedule(sum, o);
  EXPECT_TRUE(has(ir::print_loop_ir(s), "for i0 in [0, 6) grid:\n  for i1 in [0, 64) workgroup_reduce:\n    for i2 in [0, 2):\n      m[i0] = add(m[i0], x[i0, i1, i2])"))
      << ir::print_loop_ir(s);
  EXPECT_EQ(tree_reductions(s), 1) << ir::print_loop_ir(s);
  EXPECT_EQ(compare(run_interp(sum), run_interp(s), Tolerance::Reassociated), "") << ir::print_loop_ir(s);
  validate_parallel(s);
  const ir::LoweredRoutine max = two_loop_reduction(ir::Op::Max);
  const ir::LoweredRoutine m = default_gpu_schedule(max, options());
  EXPECT_TRUE(has(ir::print_loop_ir(m), "for i1 in [0, 64) workgroup_reduce:\n    for i2 in [0, 2):")) << ir::print_loop_ir(m);
  EXPECT_EQ(tree_reductions(m), 1) << ir::print_loop_ir(m);
  EXPECT_EQ(compare(run_interp(max), run_interp(m), Tolerance::Bitwise), "") << ir::print_loop_ir(m);
  // Without the licence a sum keeps its order: no block reduction.
  EXPECT_FALSE(has(scheduled(sum, options()), "workgroup_reduce")) << scheduled(sum, options());
  // A convolution's weight gradient (150 cells over 64 images of 28 x 28) is staged into
  // partials, which spread all its steps: on blocks only the images' loop would be the threads,
  // 64 a cell walking 784 steps each.
  const std::string weights = ir::print_loop_ir(default_gpu_schedule(multi_loop_reduction(ir::Op::Add, 150, {64, 28, 28}), o));
  EXPECT_TRUE(has(weights, "_partials")) << weights;
  EXPECT_FALSE(has(weights, "workgroup_reduce")) << weights;
}

// Rows enough to fill the device keep one thread each; so do short rows.
TEST(DefaultGpuSchedule, ManyRowsOrShortRowsKeepAThreadPerRow) {
  ir::GpuLimits small_device = cuda_limits();
  small_device.compute_units = 2;  // 4096 resident threads
  const std::string many = ir::print_loop_ir(default_gpu_schedule(row_reduction(ir::Op::Max, 8192, 64), options(256, 64, small_device)));
  EXPECT_FALSE(has(many, "workgroup_reduce")) << many;
  EXPECT_TRUE(has(many, "workgroup:")) << many;
  const std::string short_rows = ir::print_loop_ir(default_gpu_schedule(row_reduction(ir::Op::Max, 40, 32), options()));
  EXPECT_FALSE(has(short_rows, "workgroup_reduce")) << short_rows;
}

}  // namespace row_reductions

}  // namespace
}  // namespace cannl::schedule::testing
