// Training end to end on the GPU backend: the demo's MLP on the half-moons reaches the same
// accuracy as on the C backend, epoch losses agreeing to rounding (transcendentals may differ by
// an ulp or two between the GPU's libm and the host's), from the same initialization bits.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;
constexpr std::int64_t kSamples = 512, kBatch = 32;

struct TrainingRun {
  std::vector<double> losses;
  double accuracy = 0;
};

TrainingRun train_moons(runtime::Context ctx) {
  reset_tensor_state();
  const auto data = datasets::moons({.samples = kSamples, .noise = 0.1, .seed = 42});
  const std::int64_t n_batches = kSamples / kBatch;
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  Tensor x_all = literal("moons_x", data.features, {.batch = Dims{n_batches, kBatch}, .output = Dims{2}});
  Tensor y_all = literal("moons_y", data.one_hot(), {.batch = Dims{n_batches, kBatch}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{64}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  auto mlp = [&](const Tensor& x) { return w2 * relu(w1 * x + b1) + b2; };
  Tensor loss = nn::cross_entropy(mlp(slice_batch(x_all, batch)), slice_batch(y_all, batch));
  auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = batch, .n_batches = n_batches});
  TrainingRun run;
  run.losses = train::fit(step, {.epochs = 8});
  Tensor x_eval = literal("moons_eval_x", data.features, {.batch = Dims{kSamples}, .output = Dims{2}});
  Tensor logits = mlp(x_eval);
  auto eval = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(eval);
  run.accuracy = nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2);
  return run;
}

TEST(GpuTraining, MoonsMlpLearnsLikeOnTheCBackend) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("cpu_schedule_reassociate", "false");  // the C backend's sums in serial order
  const TrainingRun on_cc = train_moons(runtime::Context::cpu());
  const TrainingRun on_gpu = train_moons(runtime::Context(gpu));
  ASSERT_EQ(on_gpu.losses.size(), on_cc.losses.size());
  for (std::size_t e = 0; e < on_cc.losses.size(); ++e) {
    EXPECT_NEAR(on_gpu.losses[e], on_cc.losses[e], 1e-5 * std::abs(on_cc.losses[e])) << "epoch " << e + 1;
  }
  EXPECT_LT(on_gpu.losses.back(), 0.5 * on_gpu.losses.front());
  EXPECT_EQ(on_gpu.accuracy, on_cc.accuracy);
  EXPECT_GT(on_gpu.accuracy, 0.9);
}

}  // namespace
}  // namespace cannl
