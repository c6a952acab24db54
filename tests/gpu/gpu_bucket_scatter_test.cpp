// A long scatter (an embedding gradient) under the default GPU schedule with its rows bucketed
// (BucketScatter, gpu_scatter_buckets) runs on the GPU backend bitwise equal to the serial
// scatter on the interpreter: rows repeat, every bucket's edge rows are hit, some ids select no
// row, and the buckets do not divide the rows.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"
#include "schedule/scatter_test_util.h"

namespace cannl {
namespace {

using schedule::testing::EmbeddingGradient;

TEST(GpuBucketScatter, EmbeddingGradientIsBitwiseTheInterpreter) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_reassociate", "false");  // bitwise against the serial program
  struct Case {
    int row_axis;
    const char* buckets;
  };
  // The table as GPT-2's wte ([channels, rows]) with the device's own count (auto), then as
  // [rows, channels] in 7 buckets of 8 rows, the last holding 2.
  for (const Case c : {Case{1, "auto"}, Case{0, "7"}}) {
    config::set_override("gpu_scatter_buckets", c.buckets);
    const EmbeddingGradient g(50, 24, 300, c.row_axis);
    const ir::LoweredRoutine r = g.order_sensitive_routine();
    const ir::LoweredRoutine scheduled = gpu->default_schedule(r);
    const std::string text = ir::print_loop_ir(scheduled);
    EXPECT_NE(text.find("if and:f64(lt:f64("), std::string::npos) << "not bucketed:\n" << text;
    const auto params = ir::nodes_of(r.body);
    const schedule::testing::NodeBytes expected = schedule::testing::run_interp(r);
    const auto got = test_util::run_on(*gpu, {scheduled, params}, schedule::testing::test_inputs(params));
    for (std::size_t k = 0; k < params.size(); ++k)
      EXPECT_EQ(got[k], expected.at(params[k]->id)) << c.buckets << " buckets: " << params[k]->debug_name() << "\n" << text;
  }
}

}  // namespace
}  // namespace cannl
