// Dropout on the GPU backend draws the interpreter's masks bit for bit: the key (stream, step,
// steps done; its threefry computed once into a one-cell node) and one threefry per cell, at a
// steps-done count past 2^32 so the counter's high word matters too.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/nn/functional.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

/// The dropout of 4096 ones (rate 0.5, step 3 of 8) after `steps_done` training steps.
std::vector<double> dropout_mask(runtime::Context ctx, double steps_done) {
  reset_tensor_state();
  ir::StaticSymbol step{ir::fresh_symbol(), 8, "step"};
  Tensor x = literal("ones", std::vector<double>(4096, 1.0), {.batch = Dims{4096}});
  Tensor y = nn::dropout(x, step, {.rate = 0.5, .stream = "gpu_drop"});
  auto forward = train::compile_forward(ctx, {y}, "dropout");
  const auto counters = nn::step_counters_of({y});
  EXPECT_EQ(counters.size(), 1u);
  ctx.set_values(counters.at(0).value(), std::vector<double>{steps_done});
  const std::int64_t statics[] = {3};
  ctx.run(forward, statics);
  return ctx.get_values(y.value());
}

TEST(GpuDropout, MasksAreTheInterpretersBits) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const double steps_done : {0.0, 7.0, 0x1p40 + 3}) {
    const auto on_gpu = dropout_mask(runtime::Context(gpu), steps_done);
    const auto interpreted = dropout_mask(runtime::Context::interpreter(), steps_done);
    EXPECT_EQ(on_gpu, interpreted) << "steps done " << steps_done;
  }
  EXPECT_NE(dropout_mask(runtime::Context::interpreter(), 7), dropout_mask(runtime::Context::interpreter(), 8));
}

}  // namespace
}  // namespace cannl
