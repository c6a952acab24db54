// The default CPU schedule: what it annotates (tiles for matmuls, Grid above the work threshold,
// Vectorized contiguous elementwise loops) and that results stay bitwise equal, on the
// interpreter and through the runtime's cc-backend compile path where it is applied by default.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/ir/lower.h"
#include "cannl/runtime/context.h"
#include "cannl/schedule/default_cpu.h"
#include "runtime/test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

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
  EXPECT_TRUE(has(text, "grid:\n  tile_mma ")) << text;
  EXPECT_TRUE(has(text, "c[4*i")) << text;  // 32 rows in 8 chunks of 4
  EXPECT_EQ(compare(run_interp(r), run_interp(s.routine), Tolerance::Bitwise), "");
}

TEST(DefaultCpuSchedule, ElementwiseGetsGridAndVectorized) {
  Elementwise e(256, 128);
  const ScheduledRoutine s = default_cpu_schedule(e.routine(), CpuScheduleOptions{});
  const std::string text = ir::print_loop_ir(s.routine);
  EXPECT_TRUE(has(text, "for i0 in [0, 256) grid:\n  for i1 in [0, 128) vectorized:")) << text;
  EXPECT_EQ(compare(run_interp(e.routine()), run_interp(s.routine), Tolerance::Bitwise), "");
}

TEST(DefaultCpuSchedule, SmallNestsStaySerialAndReductionsAreNotVectorized) {
  Elementwise small(4, 8);
  const std::string text = ir::print_loop_ir(default_cpu_schedule(small.routine(), CpuScheduleOptions{}).routine);
  EXPECT_FALSE(has(text, "grid")) << text;
  RowSum rs(256, 256);
  const std::string sum = ir::print_loop_ir(default_cpu_schedule(rs.routine(), CpuScheduleOptions{}).routine);
  EXPECT_TRUE(has(sum, "for i0 in [0, 256) grid:\n  for i1 in [0, 256):\n")) << sum;
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

}  // namespace
}  // namespace cannl::schedule::testing
