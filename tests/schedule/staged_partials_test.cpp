// Staged partial sums and windowed reductions in the default CPU schedule:
//  * Stage_partials on its own: a convolution's input gradient (a store several iterations
//    share) becomes an injective partials nest plus an ordered scatter, within rounding of the
//    lowered nest; its ScheduleErrors; its trace;
//  * the default schedule under the licence: the input gradient staged and tiled whole, a long
//    small-cell weight gradient split into 4 ordered partials, a max pool privatized over its
//    window (bitwise) - each run on the interpreter and the C backend, which agree bitwise on the
//    scheduled routine.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/run_util.h"
#include "cannl/backends/backend.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "cannl/support/error.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

ir::AxisIndex sum(ir::Symbol a, ir::Symbol b, std::int64_t ca = 1) { return {{{ca, a}, {1, b}}, 0}; }

// x[b, oh + kh, ow + kw, ci] += g[b, oh, ow, co] * w[co, kh, kw, ci]: loops b, oh, ow, co, ci, kh, kw.
struct InputGradient {
  std::int64_t batch = 3, out = 6, channels = 4, features = 16, window = 3;
  ir::NodeRef x = ir::make_node("x", ir::DType::F32, {batch, out + window - 1, out + window - 1, channels});
  ir::NodeRef g = ir::make_node("g", ir::DType::F32, {batch, out, out, features});
  ir::NodeRef w = ir::make_node("w", ir::DType::F32, {features, window, window, channels});
  ir::Symbol b = ir::fresh_symbol(), oh = ir::fresh_symbol(), ow = ir::fresh_symbol(), co = ir::fresh_symbol(),
             ci = ir::fresh_symbol(), kh = ir::fresh_symbol(), kw = ir::fresh_symbol();
  ir::LoweredRoutine routine() const {
    const std::vector<ir::AxisIndex> at{it(b), sum(oh, kh), sum(ow, kw), it(ci)};
    const auto product = ir::apply(ir::Op::Mul, ir::DType::F32,
                                   {ir::get(g, {it(b), it(oh), it(ow), it(co)}), ir::get(w, {it(co), it(kh), it(kw), it(ci)})});
    ir::StmtRef nest = ir::set(x, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(x, at), product}));
    const std::pair<ir::Symbol, std::int64_t> inner_first[] = {
        {kw, window}, {kh, window}, {ci, channels}, {co, features}, {ow, out}, {oh, out}, {b, batch}};
    for (const auto& [s, n] : inner_first) nest = ir::for_loop(s, 0, n, nest);
    return {"conv_dx", ir::seq({ir::zero_out(x), nest}), {}};
  }
};

// dw[co, kh, kw] += g[b, oh, ow, co] * x[b, oh + kh, ow + kw]: few cells, a long reduction.
ir::LoweredRoutine first_conv_weight_gradient() {
  const std::int64_t batch = 16, out = 24, features = 2, window = 3;
  const auto x = ir::make_node("x", ir::DType::F32, {batch, out + window - 1, out + window - 1});
  const auto g = ir::make_node("g", ir::DType::F32, {batch, out, out, features});
  const auto dw = ir::make_node("dw", ir::DType::F32, {features, window, window});
  const ir::Symbol b = ir::fresh_symbol(), oh = ir::fresh_symbol(), ow = ir::fresh_symbol(), co = ir::fresh_symbol(),
                   kh = ir::fresh_symbol(), kw = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{it(co), it(kh), it(kw)};
  const auto product = ir::apply(ir::Op::Mul, ir::DType::F32,
                                 {ir::get(g, {it(b), it(oh), it(ow), it(co)}), ir::get(x, {it(b), sum(oh, kh), sum(ow, kw)})});
  ir::StmtRef nest = ir::set(dw, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(dw, at), product}));
  const std::pair<ir::Symbol, std::int64_t> inner_first[] = {{kw, window}, {kh, window}, {co, features}, {ow, out}, {oh, out}, {b, batch}};
  for (const auto& [s, n] : inner_first) nest = ir::for_loop(s, 0, n, nest);
  return {"conv0_dw", ir::seq({ir::zero_out(dw), nest}), {}};
}

// p[b, h, w, c] = max over a 2x2 window (stride 2) of x, starting from -inf: loops b, h, w, c, r, s.
ir::LoweredRoutine max_pool(std::int64_t channels = 6) {
  const std::int64_t batch = 8, size = 12;
  const auto x = ir::make_node("x", ir::DType::F32, {batch, 2 * size, 2 * size, channels});
  const auto p = ir::make_node("p", ir::DType::F32, {batch, size, size, channels});
  const ir::Symbol b = ir::fresh_symbol(), h = ir::fresh_symbol(), w = ir::fresh_symbol(), c = ir::fresh_symbol(),
                   r = ir::fresh_symbol(), s = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{it(b), it(h), it(w), it(c)};
  const auto read = ir::get(x, {it(b), sum(h, r, 2), sum(w, s, 2), it(c)});
  ir::StmtRef nest = ir::set(p, at, ir::apply(ir::Op::Max, ir::DType::F32, {ir::get(p, at), read}));
  const std::pair<ir::Symbol, std::int64_t> inner_first[] = {{s, 2}, {r, 2}, {c, channels}, {w, size}, {h, size}, {b, batch}};
  for (const auto& [sym, n] : inner_first) nest = ir::for_loop(sym, 0, n, nest);
  const ir::Symbol fb = ir::fresh_symbol(), fh = ir::fresh_symbol(), fw = ir::fresh_symbol(), fc = ir::fresh_symbol();
  ir::StmtRef init = ir::set(p, {it(fb), it(fh), it(fw), it(fc)}, ir::constant(-INFINITY, ir::DType::F32));
  const std::pair<ir::Symbol, std::int64_t> cells[] = {{fc, channels}, {fw, size}, {fh, size}, {fb, batch}};
  for (const auto& [sym, n] : cells) init = ir::for_loop(sym, 0, n, init);
  return {"max_pool", ir::seq({init, nest}), {}};
}

CpuScheduleOptions licensed() {
  CpuScheduleOptions o;
  o.reassociate = true;
  return o;
}

TEST(StagePartials, SharedStoreBecomesAnInjectiveNestAndAnOrderedScatter) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  const auto staged = schedule::apply(r, StagePartials{c.b, {c.b, c.oh, c.ow, c.ci, c.kh, c.kw}});
  const std::string text = ir::print_loop_ir(staged);
  EXPECT_TRUE(has(text, "zero_out x_partials")) << text;
  EXPECT_TRUE(has(text, "add the partials of x")) << text;
  // Re-associated (the test values are exact in f32, so here the sums even agree bitwise).
  EXPECT_EQ(compare(run_interp(r), run_interp(staged), Tolerance::Reassociated), "");
  // The trace names the kept loops and replays onto an equal program.
  const std::string trace = print_trace(record(r, {StagePartials{c.b, {c.b, c.oh, c.ow, c.ci, c.kh, c.kw}}}));
  EXPECT_TRUE(has(trace, "\nstage_partials i")) << trace;
  const InputGradient again;
  EXPECT_EQ(ir::print_loop_ir(replay(again.routine(), parse_trace(trace))), text);
}

TEST(StagePartials, ScheduleErrors) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  expect_schedule_error([&] { schedule::apply(r, StagePartials{c.b, {c.b, c.oh, c.ow, c.ci}}); },
                        {"stage_partials at i", "mentions a loop that is not kept", "keep every loop"});
  expect_schedule_error([&] { schedule::apply(r, StagePartials{c.b, {c.b, c.oh, c.ow, c.ci, c.kh, c.kw, ir::fresh_symbol()}}); },
                        {"stage_partials", "every kept loop must be a loop of the nest"});
  const Elementwise e(8, 8);
  expect_schedule_error([&] { schedule::apply(e.routine(), StagePartials{e.i, {e.i, e.j}}); },
                        {"not a perfect nest around one accumulation"});
}

// A loop kept twice gave p two axes along it and the scatter a second loop over it, so each
// partial was added once per iteration of that loop: c came out 4 times the matmul (n = 4;
// c[0, 0] = -19.359375 against -4.839844).
TEST(StagePartials, ALoopKeptTwiceIsAScheduleError) {
  const Matmul mm(3, 4, 5);
  expect_schedule_error([&] { schedule::apply(mm.routine(), StagePartials{mm.i, {mm.i, mm.j, mm.j}}); },
                        {"stage_partials at i0 keep i0 i1 i1", "loop i1 is kept twice", ">>   for i1", "each loop kept once"});
}

// Applied again to its own partials nest, a transform with minted scatter loops made a second
// scatter nest binding the same symbols as the first (printed as one loop name twice, which a
// trace cannot address apart).
TEST(StagePartials, TheSameMintedTransformAppliedTwiceIsAScheduleError) {
  const Matmul mm(3, 4, 5);
  const StagePartials t = with_scatter_loops(StagePartials{mm.i, {mm.i, mm.j}});
  const auto once = schedule::apply(mm.routine(), t);
  expect_schedule_error([&] { schedule::apply(once, t); }, {"stage_partials at i0 keep i0 i1", "already in the routine"});
}

TEST(StagePartials, DefaultScheduleTilesTheStagedInputGradient) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  CpuScheduleOptions staged = licensed();
  staged.gather_windows = false;  // else the transposed convolution (gather_windows_test.cpp)
  const ScheduledRoutine s = default_cpu_schedule(r, staged);
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "tile_mma ")) << text;
  EXPECT_TRUE(has(text, "(folded: ")) << text;
  EXPECT_TRUE(has(text, "x_partials")) << text;
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Reassociated), "");
  CpuScheduleOptions bitwise;
  bitwise.reassociate = false;
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(r, bitwise).routine), "partials"));
}

// The scatter loops are minted when the plan is made, so the schedule's later transforms of them
// (a parallel retype) name loops a trace recorded from the transform list can find.
TEST(StagePartials, TheDefaultScheduleOfAStagedGradientRecordsAndReplays) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  CpuScheduleOptions staged = licensed();
  staged.gather_windows = false;
  staged.min_parallel = 1;  // the scatter nest is annotated too
  const ScheduledRoutine s = default_cpu_schedule(r, staged);
  ASSERT_TRUE(has(ir::print_loop_ir(s.routine), "x_partials"));
  ScheduleTrace trace;
  ASSERT_NO_THROW(trace = record(r, s.transforms));
  EXPECT_EQ(program_digest(replay(r, trace)), program_digest(s.routine));
}

TEST(StagePartials, KeptEnclosingLoopsGiveEachIterationItsOwnPartials) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  const StagePartials per_item{c.oh, {c.b, c.oh, c.ow, c.ci, c.kh, c.kw}};
  const auto staged = schedule::apply(r, per_item);
  const std::string text = ir::print_loop_ir(staged);
  EXPECT_FALSE(has(text, "zero_out x_partials")) << text;  // the other items' partials may be in use
  EXPECT_TRUE(has(text, "zero this block's partials")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(staged), Tolerance::Reassociated), "");
  const std::string trace = print_trace(record(r, {per_item}));
  const InputGradient again;
  EXPECT_EQ(ir::print_loop_ir(replay(again.routine(), parse_trace(trace))), text);
}

// Partials over more cells than the cache holds are staged per batch item, in blocks of items
// that each own their partials, so the blocks run in parallel.
TEST(StagePartials, LargeInputGradientsAreStagedPerBatchItemInParallelBlocks) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  CpuScheduleOptions per_item = licensed();
  per_item.gather_windows = false;
  per_item.cached_partials_cells = 1500;  // one item's 1296 partials fit, all 3888 do not
  per_item.min_parallel = 1;
  const ScheduledRoutine s = default_cpu_schedule(r, per_item);
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "zero this block's partials")) << text;
  EXPECT_TRUE(has(text, "in [0, 3) grid")) << text;  // three blocks of one item
  EXPECT_TRUE(has(text, "tile_mma ")) << text;
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Reassociated), "");
  ScheduleTrace trace;
  ASSERT_NO_THROW(trace = record(r, s.transforms));
  EXPECT_EQ(program_digest(replay(r, trace)), program_digest(s.routine));
  CpuScheduleOptions whole = per_item;
  whole.cached_partials_cells = 4000;
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(r, whole).routine), "zero this block's partials"));
}

TEST(StagePartials, LongSmallCellReductionsGetFourOrderedPartials) {
  const ir::LoweredRoutine r = first_conv_weight_gradient();
  const ScheduledRoutine s = default_cpu_schedule(r, licensed());
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "dw_partials[")) << text;
  EXPECT_TRUE(has(text, "in [0, 4) grid")) << text;  // the four partials run in parallel
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Reassociated), "");
}

TEST(WindowedReductions, MaxPoolIsPrivatizedOverItsWindowBitwise) {
  const ir::LoweredRoutine r = max_pool();
  const ScheduledRoutine s = default_cpu_schedule(r, licensed());
  EXPECT_TRUE(std::any_of(s.transforms.begin(), s.transforms.end(),
                          [](const Transform& t) { return std::holds_alternative<Privatize>(t); }))
      << ir::print_loop_ir(s.routine);
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Bitwise), "");
}

// The max pool's gradient: dx[b, 2h + r, 2w + s, c] += where(eq(p[b, h, w, c], x[..]), dp[b, h, w, c], 0).
ir::LoweredRoutine max_pool_gradient(std::int64_t channels) {
  const std::int64_t batch = 4, size = 6;
  const auto x = ir::make_node("x", ir::DType::F32, {batch, 2 * size, 2 * size, channels});
  const auto dx = ir::make_node("dx", ir::DType::F32, {batch, 2 * size, 2 * size, channels});
  const auto p = ir::make_node("p", ir::DType::F32, {batch, size, size, channels});
  const auto dp = ir::make_node("dp", ir::DType::F32, {batch, size, size, channels});
  const ir::Symbol b = ir::fresh_symbol(), h = ir::fresh_symbol(), w = ir::fresh_symbol(), c = ir::fresh_symbol(),
                   r = ir::fresh_symbol(), s = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> cell{it(b), it(h), it(w), it(c)}, at{it(b), sum(h, r, 2), sum(w, s, 2), it(c)};
  const auto hit = ir::apply(ir::Op::Cmpeq, ir::DType::F32, {ir::get(p, cell), ir::get(x, at)});
  const auto routed = ir::apply(ir::Op::Where, ir::DType::F32, {hit, ir::get(dp, cell), ir::constant(0, ir::DType::F32)});
  ir::StmtRef nest = ir::set(dx, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(dx, at), routed}));
  const std::pair<ir::Symbol, std::int64_t> inner_first[] = {{s, 2}, {r, 2}, {c, channels}, {w, size}, {h, size}, {b, batch}};
  for (const auto& [sym, n] : inner_first) nest = ir::for_loop(sym, 0, n, nest);
  return {"max_pool_dx", ir::seq({ir::zero_out(dx), nest}), {}};
}

// With channels enough for a vector, the pooling nests move the channels below the window loops
// and vectorize them (the gradient's comparison as a lane mask): bitwise on both backends.
TEST(WindowedReductions, PoolingNestsVectorizeAlongTheChannelsBitwise) {
  for (const ir::LoweredRoutine& r : {max_pool(32), max_pool_gradient(32)}) {
    const ScheduledRoutine s = default_cpu_schedule(r, licensed());
    const std::string text = ir::print_loop_ir(s.routine);
    EXPECT_TRUE(has(text, "in [0, 32) vectorized:")) << r.name << "\n" << text;
    EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Bitwise), "") << r.name;
  }
}

}  // namespace
}  // namespace cannl::schedule::testing
