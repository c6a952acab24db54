// Gather_windows: a convolution's input gradient (a scatter over sliding windows) as the
// transposed convolution through a zero-bordered copy of the output gradient:
//  * the transform on its own, on square and non-square windows, loops starting above 0 and an
//    operand read at an offset: within rounding of the lowered nest (the re-association it is
//    licensed for); its trace; its ScheduleErrors;
//  * the default schedule under the licence with the option on: the gather tiled like a forward
//    convolution, the interpreter and the C backend agreeing bitwise on the scheduled routine,
//    and nothing gathered without the licence or with the option off;
//  * the staged form the default schedule takes instead: partials along the channels.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/run_util.h"
#include "cannl/backends/backend.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "cannl/support/error.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

ir::AxisIndex sum(ir::Symbol a, ir::Symbol b, std::int64_t offset = 0) { return {{{1, a}, {1, b}}, offset}; }

// x[b, oh + kh, ow + kw, ci] += g[b, oh, ow, co] * w[co, kh, kw, ci]: loops b, oh, ow, co, ci, kh, kw
// (the order autodiff lowers a convolution's input gradient in), a window of kh x kw.
struct InputGradient {
  std::int64_t batch = 2, out = 5, channels = 4, features = 8, kh_n = 3, kw_n = 2;
  ir::NodeRef x = ir::make_node("x", ir::DType::F32, {batch, out + kh_n - 1, out + kw_n - 1, channels});
  ir::NodeRef g = ir::make_node("g", ir::DType::F32, {batch, out, out, features});
  ir::NodeRef w = ir::make_node("w", ir::DType::F32, {features, kh_n, kw_n, channels});
  ir::Symbol b = ir::fresh_symbol(), oh = ir::fresh_symbol(), ow = ir::fresh_symbol(), co = ir::fresh_symbol(),
             ci = ir::fresh_symbol(), kh = ir::fresh_symbol(), kw = ir::fresh_symbol();
  ir::LoweredRoutine routine() const {
    const std::vector<ir::AxisIndex> at{it(b), sum(oh, kh), sum(ow, kw), it(ci)};
    const auto product = ir::apply(ir::Op::Mul, ir::DType::F32,
                                   {ir::get(g, {it(b), it(oh), it(ow), it(co)}), ir::get(w, {it(co), it(kh), it(kw), it(ci)})});
    ir::StmtRef nest = ir::set(x, at, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(x, at), product}));
    const std::pair<ir::Symbol, std::int64_t> inner_first[] = {
        {kw, kw_n}, {kh, kh_n}, {ci, channels}, {co, features}, {ow, out}, {oh, out}, {b, batch}};
    for (const auto& [s, n] : inner_first) nest = ir::for_loop(s, 0, n, nest);
    return {"conv_dx", ir::seq({ir::zero_out(x), nest}), {}};
  }
};

// y[h + k + 1] += a[h - 2] * v[k - 1] with h in [2, 8), k in [1, 4): loops that do not start at
// 0 and operands read at offsets; the fma form. (`k_end`: the window loop's end.)
struct Shifted1d {
  std::int64_t k_end = 4;
  ir::Symbol h = ir::fresh_symbol(), k = ir::fresh_symbol();
  ir::LoweredRoutine routine() const {
    const auto y = ir::make_node("y", ir::DType::F32, {12});
    const auto a = ir::make_node("a", ir::DType::F32, {6});
    const auto v = ir::make_node("v", ir::DType::F32, {3});
    const std::vector<ir::AxisIndex> at{sum(h, k, 1)};
    const auto update = ir::apply(ir::Op::Fma, ir::DType::F32,
                                  {ir::get(a, {{{{1, h}}, -2}}), ir::get(v, {{{{1, k}}, -1}}), ir::get(y, at)});
    const ir::StmtRef nest = ir::for_loop(h, 2, 8, ir::for_loop(k, 1, k_end, ir::set(y, at, update)));
    return {"shifted", ir::seq({ir::zero_out(y), nest}), {}};
  }
};

CpuScheduleOptions licensed(bool gather = true) {
  CpuScheduleOptions o;
  o.reassociate = true;
  o.gather_windows = gather;
  return o;
}

TEST(GatherWindows, InputGradientBecomesTheTransposedConvolution) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  const GatherWindows t{c.b, {{c.oh, c.kh}, {c.ow, c.kw}}};
  const auto gathered = schedule::apply(r, t);
  const std::string text = ir::print_loop_ir(gathered);
  EXPECT_TRUE(has(text, "zero_out g_windowed")) << text;
  EXPECT_TRUE(has(text, "the windows' zero border around g")) << text;
  // The output gradient grows by the window minus 1 on both sides of each windowed axis.
  const auto nodes = ir::nodes_of(gathered.body);
  const auto windowed = std::find_if(nodes.begin(), nodes.end(), [](const ir::NodeRef& n) { return n->label == "g_windowed"; });
  ASSERT_NE(windowed, nodes.end()) << text;
  EXPECT_EQ((*windowed)->dims, (std::vector<std::int64_t>{2, 9, 7, 8}));
  EXPECT_EQ(compare(run_interp(r), run_interp(gathered), Tolerance::Reassociated), "");
  // A convolution is symmetric in its operands: the window loops may play the cells, the
  // kernel then read through the zero border.
  const auto kernel_moves = schedule::apply(r, GatherWindows{c.b, {{c.kh, c.oh}, {c.kw, c.ow}}});
  EXPECT_TRUE(has(ir::print_loop_ir(kernel_moves), "w_windowed"));
  EXPECT_EQ(compare(run_interp(r), run_interp(kernel_moves), Tolerance::Reassociated), "");
  // The trace names the pairs and replays onto an equal program.
  const std::string trace = print_trace(record(r, {t}));
  EXPECT_TRUE(has(trace, "\ngather_windows i0 i1 i5 i2 i6")) << trace;
  const InputGradient again;
  EXPECT_EQ(ir::print_loop_ir(replay(again.routine(), parse_trace(trace))), text);
}

TEST(GatherWindows, LoopsAboveZeroAndOffsetReads) {
  const Shifted1d c;
  const ir::LoweredRoutine r = c.routine();
  const auto gathered = schedule::apply(r, GatherWindows{c.h, {{c.h, c.k}}});
  EXPECT_EQ(compare(run_interp(r), run_interp(gathered), Tolerance::Reassociated), "") << ir::print_loop_ir(gathered);
}

TEST(GatherWindows, ScheduleErrors) {
  const InputGradient c;
  const ir::LoweredRoutine r = c.routine();
  expect_schedule_error([&] { schedule::apply(r, GatherWindows{c.b, {{c.oh, c.kw}}}); },
                        {"gather_windows at i0", "no axis o + k"});
  expect_schedule_error([&] { schedule::apply(r, GatherWindows{c.b, {{c.ci, c.kh}}}); },
                        {"no axis o + k"});
  expect_schedule_error([&] { schedule::apply(r, GatherWindows{c.b, {}}); }, {"no window pairs"});
  expect_schedule_error([&] { schedule::apply(r, GatherWindows{c.b, {{c.oh, c.kh}, {c.oh, c.kh}}}); },
                        {"each loop in one pair"});
  expect_schedule_error([&] { schedule::apply(r, GatherWindows{c.b, {{c.oh, ir::fresh_symbol()}}}); },
                        {"two distinct loops of the nest"});
  const Elementwise e(8, 8);
  expect_schedule_error([&] { schedule::apply(e.routine(), GatherWindows{e.i, {{e.i, e.j}}}); },
                        {"not a perfect nest around one update"});
}

// An empty window loop (k in [1, 1)) gave a border of -1: a copy of a 6-cell operand into a
// 4-cell node starting at a_windowed[-1] (out of bounds on the interpreter, a stray store in C).
TEST(GatherWindows, AnEmptyWindowIsAScheduleError) {
  const Shifted1d c{1};
  expect_schedule_error([&] { schedule::apply(c.routine(), GatherWindows{c.h, {{c.h, c.k}}}); },
                        {"gather_windows at i0 i0 i1", "the window loop is empty", ">>   for i1"});
}

TEST(GatherWindows, DefaultScheduleTilesTheGatherLikeAForwardConvolution) {
  InputGradient c;
  c.batch = 2, c.out = 5, c.channels = 16, c.features = 16, c.kh_n = 3, c.kw_n = 3;
  c.x = ir::make_node("x", ir::DType::F32, {c.batch, c.out + 2, c.out + 2, c.channels});
  c.g = ir::make_node("g", ir::DType::F32, {c.batch, c.out, c.out, c.features});
  c.w = ir::make_node("w", ir::DType::F32, {c.features, 3, 3, c.channels});
  const ir::LoweredRoutine r = c.routine();
  const ScheduledRoutine s = default_cpu_schedule(r, licensed());
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "g_windowed")) << text;
  EXPECT_TRUE(has(text, "tile_mma ")) << text;
  EXPECT_FALSE(has(text, "x_partials")) << text;
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Reassociated), "");
  CpuScheduleOptions bitwise;
  bitwise.reassociate = false;
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(r, bitwise).routine), "windowed"));
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(r, licensed(false)).routine), "windowed"));
}

// Without the gather the input gradient is staged with the channels innermost: the partials run
// along them, so the tile's columns are one contiguous run and the scatter is vectorized.
TEST(StagedWindows, PartialsRunAlongTheChannels) {
  InputGradient c;
  c.channels = 16;
  c.x = ir::make_node("x", ir::DType::F32, {c.batch, c.out + c.kh_n - 1, c.out + c.kw_n - 1, c.channels});
  c.w = ir::make_node("w", ir::DType::F32, {c.features, c.kh_n, c.kw_n, c.channels});
  const ir::LoweredRoutine r = c.routine();
  const ScheduledRoutine s = default_cpu_schedule(r, licensed(false));
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "x_partials")) << text;
  EXPECT_TRUE(std::any_of(s.transforms.begin(), s.transforms.end(),
                          [](const Transform& t) { return std::holds_alternative<Swap>(t); }))
      << text;
  EXPECT_TRUE(has(text, "vectorized")) << text;
  EXPECT_EQ(compare(run_interp(r), agree_on_both(s.routine), Tolerance::Reassociated), "");
}

}  // namespace
}  // namespace cannl::schedule::testing
