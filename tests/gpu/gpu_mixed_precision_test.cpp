// A mixed-precision program on the GPU backend: the gradients of a relu MLP built under the bf16
// policy (rounded operand copies, the rounded incoming gradient) are bitwise the C backend's (the
// f16 and tf32 roundings are covered op by op by the parity test), with neither backend re-associating (the loss has no transcendental, whose libm
// results may differ by an ulp between the GPU and the host).
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

std::vector<double> ramp(std::int64_t n, double scale) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(scale * static_cast<double>((i * 37) % 23 - 11) / 7.0);
  return v;
}

/// Gradients of mean(mlp(x) * w) for a 6 -> 24 -> 24 -> 3 relu MLP on 12 rows, under `policy`.
std::vector<std::vector<double>> mlp_gradients(runtime::Context ctx, MatmulPrecision policy) {
  reset_tensor_state();
  Tensor loss;
  {
    PrecisionScope scope(PrecisionPolicy{policy});
    Tensor x = literal("x", ramp(12 * 6, 0.3), {.batch = Dims{12}, .input = Dims{}, .output = Dims{6}});
    Tensor w = literal("w", ramp(12 * 3, 0.1), {.batch = Dims{12}, .input = Dims{}, .output = Dims{3}});
    nn::Mlp mlp("mlp", {.hidden = {24, 24}, .out = {3}, .output_bias = true});
    loss = mean(pointmul(mlp(x), w));
  }
  const auto params = params_of({loss});
  train::upload_literals(ctx, {loss});
  auto init = ctx.compile(init_params_code(params), "init");
  auto grad = ctx.compile(grad_update_code(loss), "mixed_gradients");
  ctx.run(init);
  ctx.run(grad);
  std::vector<std::vector<double>> out;
  for (const auto& p : params) out.push_back(ctx.get_values(p.grad()));
  return out;
}

TEST(GpuMixedPrecision, PolicyGradientsBitwiseAsTheCBackend) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("cpu_schedule_reassociate", "false");
  config::set_override("gpu_schedule_reassociate", "false");
  const auto on_cc = mlp_gradients(runtime::Context::cpu(), MatmulPrecision::BF16);
  const auto on_gpu = mlp_gradients(runtime::Context(gpu), MatmulPrecision::BF16);
  ASSERT_EQ(on_gpu.size(), on_cc.size());
  for (std::size_t k = 0; k < on_cc.size(); ++k) EXPECT_EQ(on_gpu[k], on_cc[k]) << "parameter " << k;
}

}  // namespace
}  // namespace cannl
