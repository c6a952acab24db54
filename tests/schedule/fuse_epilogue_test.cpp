// FuseEpilogue: a matmul's bias + relu tail moved into the row loop (serial, Grid chunk,
// around a TileMma) stays bitwise equal to the unscheduled program on the interpreter and, from
// the default CPU schedule, on the C backend; consumers that need other rows, statements in the
// way and mismatched ranges are ScheduleErrors; the step round-trips through a trace.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

/// c = a * b (Matmul), then out[r, j] = relu(c[row(r), j] + bias[j]) over loops r, j; row(r) is
/// r unless `reversed` (m - 1 - r: a consumer reading other rows).
struct MatmulBiasRelu {
  Matmul mm;
  ir::NodeRef bias, out;
  ir::Symbol r = ir::fresh_symbol(), j = ir::fresh_symbol();
  bool reversed = false;

  MatmulBiasRelu(std::int64_t m, std::int64_t n, std::int64_t k, bool reversed_rows = false)
      : mm(m, n, k), bias(ir::make_node("bias", ir::DType::F32, {n})), out(ir::make_node("out", ir::DType::F32, {m, n})),
        reversed(reversed_rows) {}

  ir::StmtRef tail() const {
    using ir::DType;
    const ir::AxisIndex row = reversed ? ir::AxisIndex{{{-1, r}}, mm.m - 1} : it(r);
    const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(mm.c, {row, it(j)}), ir::get(bias, {it(j)})});
    const auto value = ir::apply(ir::Op::Relu, DType::F32, {sum});
    return ir::for_loop(r, 0, mm.m, ir::for_loop(j, 0, mm.n, ir::set(out, {it(r), it(j)}, value, "out = relu(c + bias)")));
  }
  ir::LoweredRoutine routine(std::vector<ir::StmtRef> between = {}) const {
    std::vector<ir::StmtRef> body{ir::zero_out(mm.c), mm.nest()};
    body.insert(body.end(), between.begin(), between.end());
    body.push_back(tail());
    return {"matmul_bias_relu", ir::seq(std::move(body)), {}};
  }
};

void expect_bitwise(const ir::LoweredRoutine& before, const ir::LoweredRoutine& after) {
  EXPECT_EQ(compare(run_interp(before), run_interp(after), Tolerance::Bitwise), "") << ir::print_loop_ir(after);
}

TEST(FuseEpilogue, BiasReluMovesIntoTheRowLoopBitwise) {
  MatmulBiasRelu e(6, 5, 4);
  const auto r = e.routine();
  const auto out = schedule::apply(r, FuseEpilogue{e.mm.c->id, e.mm.i});
  const std::string text = ir::print_loop_ir(out);
  // The tail sits in the row loop after the j/k nest, indexed by the row loop i0.
  EXPECT_TRUE(has(text, "  for i3 in [0, 5):\n    out[i0, i3] = relu(add(c[i0, i3], bias[i3]))")) << text;
  EXPECT_FALSE(has(text, "i4")) << text;  // the consumer's row loop is gone
  expect_bitwise(r, out);
}

TEST(FuseEpilogue, GridChunkAroundATileMmaAfterIndependentStatements) {
  MatmulBiasRelu e(8, 6, 5);
  const auto y = ir::make_node("y", ir::DType::F32, {6});
  const ir::Symbol t = ir::fresh_symbol();
  const auto twice = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(e.mm.a, {ir::AxisIndex::fixed(0), it(t)}), ir::constant(2, ir::DType::F32)});
  const auto r = e.routine({ir::for_loop(t, 0, 5, ir::set(y, {it(t)}, twice))});
  const Split rows = split(e.mm.i, 4, ir::AxisType::Grid), tail_rows = split(e.r, 4);
  const auto out = schedule::apply(r, {rows, Tensorize{rows.inner, e.mm.j, e.mm.k}, tail_rows,
                                       FuseEpilogue{e.mm.c->id, rows.outer}});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 2) grid:\n  tile_mma")) << text;
  EXPECT_TRUE(has(text, "out[4*i0 + i4, i5] = relu(add(c[4*i0 + i4, i5], bias[i5]))")) << text;
  EXPECT_LT(text.find("relu"), text.find("y[")) << text;  // moved above the independent loop
  expect_bitwise(r, out);
}

TEST(FuseEpilogue, AConsumerReadingAnotherRowIsAScheduleError) {
  MatmulBiasRelu e(6, 5, 4, /*reversed_rows=*/true);
  expect_schedule_error([&] { schedule::apply(e.routine(), FuseEpilogue{e.mm.c->id, e.mm.i}); },
                        {"fuse_epilogue c into i0", "reads c at cells that other iterations of i0 write",
                         ">> for i3 in [0, 6):", "legal alternatives:"});
}

TEST(FuseEpilogue, AStatementInTheWayIsAScheduleError) {
  MatmulBiasRelu e(4, 3, 2);
  const auto between = ir::set(e.bias, {ir::AxisIndex::fixed(1)}, ir::constant(7, ir::DType::F32));
  expect_schedule_error([&] { schedule::apply(e.routine({between}), FuseEpilogue{e.mm.c->id, e.mm.i}); },
                        {"a statement between i0 and the consumer writes bias, which the consumer reads"});
}

TEST(FuseEpilogue, WrongAnchorOrRangeIsAScheduleError) {
  MatmulBiasRelu e(4, 3, 2);
  expect_schedule_error([&] { schedule::apply(e.routine(), FuseEpilogue{e.mm.a->id, e.mm.i}); },
                        {"the anchor loop does not write a"});
  expect_schedule_error([&] { schedule::apply(e.routine(), FuseEpilogue{e.mm.c->id, e.mm.j}); },
                        {"no statement follows the anchor"});
  expect_schedule_error([&] { schedule::apply(e.routine(), FuseEpilogue{e.out->id, e.r}); },
                        {"no statement follows the anchor"});
  const Split rows = split(e.mm.i, 2);
  expect_schedule_error([&] { schedule::apply(e.routine(), {rows, FuseEpilogue{e.mm.c->id, rows.outer}}); },
                        {"spans [0, 4) but the anchor i0 spans [0, 2)", "split the consumer loop like the anchor first"});
}

TEST(FuseEpilogue, RoundTripsThroughATrace) {
  MatmulBiasRelu first(6, 5, 4);
  const std::vector<Transform> steps{FuseEpilogue{first.mm.c->id, first.mm.i}};
  const ScheduleTrace trace = record(first.routine(), steps);
  EXPECT_NE(print_trace(trace).find("\nfuse_epilogue n0 i0\n"), std::string::npos) << print_trace(trace);
  MatmulBiasRelu second(6, 5, 4);
  const auto replayed = replay(second.routine(), parse_trace(print_trace(trace)));
  EXPECT_EQ(ir::print_loop_ir(replayed), ir::print_loop_ir(schedule::apply(first.routine(), steps)));
}

TEST(FuseEpilogue, DefaultCpuScheduleFusesTheTailIntoTheGridChunksWhenAsked) {
  MatmulBiasRelu e(32, 32, 32);
  const auto r = e.routine();
  CpuScheduleOptions options;
  EXPECT_FALSE(has(ir::print_loop_ir(default_cpu_schedule(r, options).routine), "  for i4 in [0, 4):\n"));
  options.fuse_epilogues = true;
  const ScheduledRoutine s = default_cpu_schedule(r, options);
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "for i0 in [0, 8) grid:\n  tile_mma")) << text;
  EXPECT_TRUE(has(text, "  for i4 in [0, 4):\n    for i5 in [0, 32) vectorized:\n      out[4*i0 + i4, i5] = relu(")) << text;
  const NodeBytes interpreted = run_interp(s.routine);
  EXPECT_EQ(compare(run_interp(r), interpreted, Tolerance::Bitwise), "");
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& ex) {
    GTEST_SKIP() << ex.what();
  }
  const backends::CompileRequest request{s.routine, ir::nodes_of(r.body)};
  const std::vector<test_util::Bytes> inputs = test_inputs(request.params);
  const auto compiled = test_util::run_on(*test_util::cc(), request, inputs);
  for (std::size_t k = 0; k < request.params.size(); ++k)
    EXPECT_EQ(compiled[k], interpreted.at(request.params[k]->id)) << request.params[k]->debug_name();
}

}  // namespace
}  // namespace cannl::schedule::testing
