// The default CPU schedule: what it annotates (tiles for matmuls, Grid above the work threshold,
// Vectorized contiguous elementwise loops) and that results stay bitwise equal, on the
// interpreter and through the runtime's cc-backend compile path where it is applied by default.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/run_util.h"
#include "cannl/ir/lower.h"
#include "cannl/runtime/context.h"
#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/trace.h"
#include "runtime/test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

ir::Comp matmul_comp(const ir::NodeRef& a, const ir::NodeRef& b, const ir::NodeRef& c, std::int64_t n) {
  using cannl::testing::accum_op;
  using cannl::testing::of;
  return cannl::testing::single_accum(
      accum_op(c, ir::Op::Add, ir::Op::Mul, {of(a), of(b)}, cannl::testing::matmul_projections(n, n, n), true));
}

TEST(DefaultCpuSchedule, LoweredMatmulGetsParallelRegisterTiles) {
  const auto a = ir::make_node("a", ir::DType::F32, {32, 32});
  const auto b = ir::make_node("b", ir::DType::F32, {32, 32});
  const auto c = ir::make_node("c", ir::DType::F32, {32, 32});
  const ir::LoweredRoutine r = ir::lower(matmul_comp(a, b, c, 32), "matmul");
  const ScheduledRoutine s = default_cpu_schedule(r, CpuScheduleOptions{});
  const std::string text = ir::print_loop_ir(s.routine);
  // One tile over all 32 rows: the final lowering round gives it the target's team.
  EXPECT_TRUE(has(text, "\ntile_mma i")) << text;
  EXPECT_FALSE(has(text, "grid")) << text;
  EXPECT_EQ(compare(run_interp(r), run_interp(s.routine), Tolerance::Bitwise), "");
}

// A three-loop matmul whose store two cells of a tile share (d[i + j] += a[i, k] * b[k, j], a
// polynomial product) is no tile: without the licence the nest stays a loop nest, bitwise,
// instead of the schedule throwing the Tensorize's refusal.
TEST(DefaultCpuSchedule, AMatmulStoringTwoCellsToOneElementStaysANest) {
  using ir::DType;
  const auto a = ir::make_node("a", DType::F32, {32, 32});
  const auto b = ir::make_node("b", DType::F32, {32, 32});
  const auto d = ir::make_node("d", DType::F32, {63});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{{{{1, i}, {1, j}}, 0}};
  const auto product = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(i), it(k)}), ir::get(b, {it(k), it(j)})});
  const auto update = ir::set(d, at, ir::apply(ir::Op::Add, DType::F32, {ir::get(d, at), product}));
  const ir::LoweredRoutine r{"polynomial_product",
                             ir::seq({ir::zero_out(d), ir::for_loop(i, 0, 32, ir::for_loop(j, 0, 32, ir::for_loop(k, 0, 32, update)))}),
                             {}};
  CpuScheduleOptions options;
  options.reassociate = false;
  const ScheduledRoutine s = default_cpu_schedule(r, options);
  EXPECT_FALSE(has(ir::print_loop_ir(s.routine), "tile_mma")) << ir::print_loop_ir(s.routine);
  EXPECT_EQ(compare(run_interp(r), run_interp(s.routine), Tolerance::Bitwise), "");
}

TEST(DefaultCpuSchedule, ElementwiseGetsGridAndVectorized) {
  Elementwise e(256, 128);
  const ScheduledRoutine s = default_cpu_schedule(e.routine(), CpuScheduleOptions{});
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "for i0 in [0, 256) grid:\n  for i1 in [0, 128) vectorized:")) << text;
  EXPECT_EQ(compare(run_interp(e.routine()), run_interp(s.routine), Tolerance::Bitwise), "");
}

TEST(DefaultCpuSchedule, SmallNestsStaySerialAndReductionsNeedTheLicence) {
  Elementwise small(4, 8);
  const std::string text = ir::print_loop_ir(default_cpu_schedule(small.routine(), CpuScheduleOptions{}).routine);
  EXPECT_FALSE(has(text, "grid")) << text;
  RowSum rs(256, 256);
  CpuScheduleOptions serial_sums;
  serial_sums.reassociate = false;
  const std::string sum = ir::print_loop_ir(default_cpu_schedule(rs.routine(), serial_sums).routine);
  EXPECT_TRUE(has(sum, "for i0 in [0, 256) grid:\n  for i1 in [0, 256):\n")) << sum;
  const std::int64_t short_extent = CpuScheduleOptions{}.min_reassociate_extent - 1;
  RowSum short_rows(256, short_extent);  // below min_reassociate_extent
  const std::string short_sum = ir::print_loop_ir(default_cpu_schedule(short_rows.routine(), CpuScheduleOptions{}).routine);
  EXPECT_TRUE(has(short_sum, "for i0 in [0, 256) grid:\n  for i1 in [0, " + std::to_string(short_extent) + "):\n"))
      << short_sum;
}

// A licensed long reduction: interleaved vector partials, one row per Grid iteration. The
// re-association is in the loop IR, so the interpreter and the C backend agree bit for bit on
// the scheduled routine; against the serial routine only within rounding (max / min exactly).
// A subtracting one (s = s - x, the gradient of a subtraction) sums its partials into s.
TEST(DefaultCpuSchedule, LongReductionsGetInterleavedVectorPartials) {
  for (const ir::Op op : {ir::Op::Add, ir::Op::Sub, ir::Op::Max, ir::Op::Min}) {
    RowSum rs(64, 1000, op);  // 1000 = 15 chunks of 64 lanes + a tail of 40
    CpuScheduleOptions options;
    options.min_parallel = 1;
    const ScheduledRoutine s = default_cpu_schedule(rs.routine(), options);
    const std::string text = ir::print_loop_ir(s.routine);
    EXPECT_TRUE(has(text, "for i0 in [0, 64) grid:\n")) << text;
    EXPECT_TRUE(has(text, "for i3 in [0, 64) vectorized:\n      s_partials[i0, i3] = ")) << text;
    const NodeBytes scheduled = run_interp(s.routine);
    const bool sums = op == ir::Op::Add || op == ir::Op::Sub;
    EXPECT_EQ(compare(run_interp(rs.routine()), scheduled, sums ? Tolerance::Reassociated : Tolerance::Bitwise), "")
        << ir::op_name(op);
    try {
      (void)test_util::cc();
    } catch (const BackendUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
    const backends::CompileRequest request{s.routine, {rs.x, rs.s}};
    const std::string source = test_util::cc()->compile(request)->source();
    EXPECT_TRUE(has(source, "vectorized, ")) << source;
    EXPECT_TRUE(has(source, "#pragma omp parallel for")) << source;
    const std::vector<test_util::Bytes> inputs = test_inputs(request.params);
    const auto compiled = test_util::run_on(*test_util::cc(), request, inputs);
    EXPECT_EQ(compiled[1], scheduled.at(rs.s->id)) << ir::op_name(op);
  }
}

// A short licensed reduction (an attention row of 128 keys, a LayerNorm row of 256) takes one
// vector of partials: with 64 the scalar combine of the partials outweighs the row.
TEST(DefaultCpuSchedule, ShortReductionsTakeOneVectorOfPartials) {
  RowSum rs(64, 256, ir::Op::Max);
  CpuScheduleOptions options;
  options.min_parallel = 1;
  const ScheduledRoutine s = default_cpu_schedule(rs.routine(), options);
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "for i3 in [0, 16) vectorized:\n      s_partials[i0, i3] = ")) << text;
  EXPECT_EQ(compare(run_interp(rs.routine()), run_interp(s.routine), Tolerance::Bitwise), "");
  RowSum long_rows(64, 512);
  const std::string long_text = ir::print_loop_ir(default_cpu_schedule(long_rows.routine(), options).routine);
  EXPECT_TRUE(has(long_text, "for i3 in [0, 64) vectorized:\n")) << long_text;
}

// A dot product in the optimizer's fused form, s[i] = fma(w[i, r], x[r], s[i]): the same
// interleaved partials, each lane taking its own fused updates.
TEST(DefaultCpuSchedule, FusedDotProductsGetInterleavedVectorPartials) {
  using ir::DType;
  const auto w = ir::make_node("w", DType::F32, {16, 1000});
  const auto x = ir::make_node("x", DType::F32, {1000});
  const auto s = ir::make_node("s", DType::F32, {16});
  const ir::Symbol i = ir::fresh_symbol(), r = ir::fresh_symbol();
  const auto it = [](ir::Symbol v) { return ir::AxisIndex::iterator(v); };
  const auto fma = ir::apply(ir::Op::Fma, DType::F32, {ir::get(w, {it(i), it(r)}), ir::get(x, {it(r)}), ir::get(s, {it(i)})});
  const ir::LoweredRoutine dot{"dot", ir::seq({ir::zero_out(s), ir::for_loop(i, 0, 16, ir::for_loop(r, 0, 1000, ir::set(s, {it(i)}, fma)))}), {}};
  CpuScheduleOptions options;
  options.min_parallel = 1;
  const ScheduledRoutine scheduled = default_cpu_schedule(dot, options);
  const std::string text = ir::print_loop_ir(scheduled.routine);
  EXPECT_TRUE(has(text, "vectorized:\n      s_partials[i0, i3] = fma(")) << text;
  EXPECT_EQ(compare(run_interp(dot), run_interp(scheduled.routine), Tolerance::Reassociated), "");
}

// A matrix-vector product reading its matrix along the cells (a tied lm_head, y[v] += x[d] *
// w[d, v]): the cells split into chunks (4 of 256) below the steps, each chunk a Grid
// iteration with a vector loop over its cells; bitwise, since each cell keeps its order.
TEST(DefaultCpuSchedule, StridedMatrixVectorProductsRunAlongTheRows) {
  using ir::DType;
  const auto w = ir::make_node("w", DType::F32, {16, 1024});
  const auto x = ir::make_node("x", DType::F32, {16});
  const auto y = ir::make_node("y", DType::F32, {1024});
  const ir::Symbol v = ir::fresh_symbol(), d = ir::fresh_symbol();
  const auto it = [](ir::Symbol s) { return ir::AxisIndex::iterator(s); };
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(y, {it(v)}), ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(d)}), ir::get(w, {it(d), it(v)})})});
  const ir::LoweredRoutine gemv{"gemv", ir::seq({ir::zero_out(y), ir::for_loop(v, 0, 1024, ir::for_loop(d, 0, 16, ir::set(y, {it(v)}, sum)))}), {}};
  CpuScheduleOptions options;
  options.min_parallel = 1;
  const ScheduledRoutine scheduled = default_cpu_schedule(gemv, options);
  const std::string text = ir::print_loop_ir(scheduled.routine);
  EXPECT_TRUE(has(text, "in [0, 4) grid:\n  for i1 in [0, 16):\n    for i2 in [0, 256) vectorized:")) << text;
  EXPECT_EQ(compare(run_interp(gemv), run_interp(scheduled.routine), Tolerance::Bitwise), "");
  // 16391 cells (a prime): the head [0, 16384) gets the chunks, the tail of 7 stays plain.
  const auto y2 = ir::make_node("y2", DType::F32, {16391});
  const auto w2 = ir::make_node("w2", DType::F32, {16, 16391});
  const auto sum2 = ir::apply(ir::Op::Add, DType::F32, {ir::get(y2, {it(v)}), ir::apply(ir::Op::Mul, DType::F32, {ir::get(x, {it(d)}), ir::get(w2, {it(d), it(v)})})});
  const ir::LoweredRoutine prime{"gemv", ir::seq({ir::zero_out(y2), ir::for_loop(v, 0, 16391, ir::for_loop(d, 0, 16, ir::set(y2, {it(v)}, sum2)))}), {}};
  const ScheduledRoutine headed = default_cpu_schedule(prime, options);
  const std::string head_text = ir::print_loop_ir(headed.routine);
  EXPECT_TRUE(has(head_text, "in [0, 4) grid:\n  for i1 in [0, 16):\n    for i2 in [0, 4096) vectorized:")) << head_text;
  EXPECT_TRUE(has(head_text, "in [16384, 16391)")) << head_text;
  // The schedule is data: its trace names the segments' loops and replays to the same routine.
  const ScheduleTrace trace = record(prime, headed.transforms);
  EXPECT_EQ(ir::print_loop_ir(replay(prime, trace)), head_text);
}

// NaN and signed zeros: the vector max / min lanes follow maximumNumber / minimumNumber.
TEST(DefaultCpuSchedule, VectorMaxAndMinKeepNanAndSignedZeroRules) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const float specials[] = {0.0f, -0.0f, std::nanf(""), 1.5f, -2.0f, -0.0f, 0.0f};
  for (const ir::Op op : {ir::Op::Max, ir::Op::Min}) {
    RowSum rs(8, 512, op);
    CpuScheduleOptions options;
    options.min_parallel = 1;
    const ir::LoweredRoutine scheduled = default_cpu_schedule(rs.routine(), options).routine;
    std::vector<float> x(8 * 512);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = k / 512 < 4 ? specials[(k * 7 + k / 512) % 7] : specials[(k / 512) % 3];
    const std::vector<test_util::Bytes> inputs{test_util::bytes_of(x), test_util::bytes_of(std::vector<float>(8, -0.0f))};
    const auto serial = test_util::run_on(*test_util::cc(), {rs.routine(), {rs.x, rs.s}}, inputs);
    EXPECT_EQ(test_util::run_on(*test_util::cc(), {scheduled, {rs.x, rs.s}}, inputs)[1], serial[1]) << ir::op_name(op);
  }
}

// A unit-stride loop over short trailing loops that share its store's axis (a dilated
// convolution's input gradient over a signal, dx[c + 2r] += x[c, r]) reaches a cell from several
// (c, r): sinking c below r would reverse each cell's order of updates, which without the
// licence must keep its bits (1e8 + 1 - 1e8 depends on the order).
TEST(DefaultCpuSchedule, AUnitStrideLoopSharingItsAxisWithTheWindowIsNotSunk) {
  try {
    (void)test_util::cc();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  using ir::DType;
  const auto x = ir::make_node("x", DType::F32, {64, 4});
  const auto dx = ir::make_node("dx", DType::F32, {70});
  const ir::Symbol c = ir::fresh_symbol(), r = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{{{{1, c}, {2, r}}, 0}};
  const auto v = ir::apply(ir::Op::Add, DType::F32, {ir::get(dx, at), ir::get(x, {it(c), it(r)})});
  const ir::LoweredRoutine dilated{"dilated_scatter", ir::for_loop(c, 0, 64, ir::for_loop(r, 0, 4, ir::set(dx, at, v))), {}};
  CpuScheduleOptions options;
  options.reassociate = false;
  const ir::LoweredRoutine scheduled = default_cpu_schedule(dilated, options).routine;
  std::vector<float> values(64 * 4);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = k % 3 == 1 ? 1.0f : (k % 3 == 0 ? 1e8f : -1e8f);
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(values), test_util::bytes_of(std::vector<float>(70, 0.0f))};
  const auto serial = test_util::run_on(*test_util::cc(), {dilated, {x, dx}}, inputs);
  EXPECT_EQ(test_util::run_on(*test_util::cc(), {scheduled, {x, dx}}, inputs)[1], serial[1]) << ir::print_loop_ir(scheduled);
}

TEST(DefaultCpuSchedule, ConfigKeysSwitchItOffAndSetTheThreshold) {
  test_util::ConfigGuard guard;
  Elementwise e(256, 128);
  config::set_override("cpu_schedule_min_parallel", "1000000");
  EXPECT_EQ(CpuScheduleOptions::from_config().min_parallel, 1000000);
  EXPECT_FALSE(has(ir::print_loop_ir(maybe_default_cpu_schedule(e.routine())), "grid"));
  config::set_override("cpu_schedule_min_parallel", "");
  EXPECT_TRUE(has(ir::print_loop_ir(maybe_default_cpu_schedule(e.routine())), "grid"));
  config::set_override("automatic_cpu_schedule", "false");
  const ir::LoweredRoutine r = e.routine();
  EXPECT_EQ(maybe_default_cpu_schedule(r).body, r.body);
}

// Through Context::compile on the cc backend (where the schedule applies by default): the same
// bits with the schedule on and off.
TEST(DefaultCpuSchedule, RuntimeMatmulIsBitwiseWithAndWithoutTheSchedule) {
  test_util::ConfigGuard guard;
  std::vector<double> a_values(96 * 96), b_values(96 * 96);
  for (std::size_t k = 0; k < a_values.size(); ++k) {
    a_values[k] = test_value(1, k);
    b_values[k] = test_value(2, k);
  }
  auto run = [&](bool scheduled) {
    config::set_override("automatic_cpu_schedule", scheduled ? "true" : "false");
    runtime::Context ctx = [] {
      try { return runtime::Context::cpu(); } catch (const BackendUnavailable&) { return runtime::Context::interpreter(); }
    }();
    const auto a = ir::make_node("a", ir::DType::F32, {96, 96});
    const auto b = ir::make_node("b", ir::DType::F32, {96, 96});
    const auto c = ir::make_node("c", ir::DType::F32, {96, 96});
    c->mode = ir::MemoryMode::Materialized;
    auto routine = ctx.compile(matmul_comp(a, b, c, 96), "scheduled_matmul");
    ctx.set_values(a, a_values);
    ctx.set_values(b, b_values);
    ctx.run(routine);
    return ctx.get_values(c);
  };
  const auto serial = run(false);
  const auto scheduled = run(true);
  ASSERT_EQ(serial.size(), scheduled.size());
  for (std::size_t k = 0; k < serial.size(); ++k) ASSERT_EQ(serial[k], scheduled[k]) << "cell " << k;
}

// Through Context::compile: the partials are arrays inside the routine (not context buffers),
// the licensed sum is within rounding of the serial one, and the licence off gives its bits.
TEST(DefaultCpuSchedule, RuntimeRowSumsReassociateOnlyWithTheLicence) {
  test_util::ConfigGuard guard;
  std::vector<double> x_values(16 * 4096);
  for (std::size_t k = 0; k < x_values.size(); ++k) x_values[k] = test_value(3, k) + 1.0 / 3.0;
  auto run = [&](const char* schedule, const char* reassociate) {
    config::set_override("automatic_cpu_schedule", schedule);
    config::set_override("cpu_schedule_reassociate", reassociate);
    runtime::Context ctx = runtime::Context::cpu();
    const auto x = ir::make_node("x", ir::DType::F32, {16, 4096});
    const auto s = ir::make_node("s", ir::DType::F32, {16});
    s->mode = ir::MemoryMode::Materialized;
    ir::Projections p;
    const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
    p.product_space = {16, 4096};
    p.product_iterators = {i, j};
    p.lhs_dims = {16};
    p.rhs_dims = {{16, 4096}};
    p.project_lhs = {ir::AxisIndex::iterator(i)};
    p.project_rhs = {{ir::AxisIndex::iterator(i), ir::AxisIndex::iterator(j)}};
    auto routine = ctx.compile(cannl::testing::single_accum(cannl::testing::accum_op(s, ir::Op::Add, ir::Op::Identity,
                                                                                      {cannl::testing::of(x)}, p, true)),
                               "row_sums");
    ctx.set_values(x, x_values);
    ctx.run(routine);
    return ctx.get_values(s);
  };
  try {
    (void)runtime::Context::cpu();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << e.what();
  }
  const auto serial = run("false", "true");
  const auto licensed = run("true", "true");
  const auto unlicensed = run("true", "false");
  ASSERT_EQ(serial.size(), 16u);
  EXPECT_EQ(unlicensed, serial);
  EXPECT_NE(licensed, serial);  // 4096 sums of thirds: the rounding differs somewhere
  for (std::size_t k = 0; k < serial.size(); ++k) EXPECT_NEAR(licensed[k], serial[k], 1e-4 * std::abs(serial[k]) + 1e-3);
}

}  // namespace
}  // namespace cannl::schedule::testing
