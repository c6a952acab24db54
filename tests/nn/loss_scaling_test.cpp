// Dynamic loss scaling: an overflowing step is skipped (parameters and optimizer state untouched)
// and halves the scale, good steps in a row grow it, and scaling by a power of two changes no bit
// of an f32 training run.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class LossScaling : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

/// tanh MLP 2 -> 16 -> 2 on 32 circle points per batch, cross-entropy, built under `precision`.
struct Circles {
  Tensor loss;
  ir::StaticSymbol batch{ir::fresh_symbol(), 8, "batch"};
};

Circles circles_model(MatmulPrecision precision) {
  reset_tensor_state();
  PrecisionScope scope(PrecisionPolicy{precision});
  Circles c;
  c.batch = ir::StaticSymbol{ir::fresh_symbol(), 8, "batch"};
  auto data = datasets::circles({.samples = 256, .seed = 3});
  Tensor x = literal("x", data.features, {.batch = Dims{8, 32}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{8, 32}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{16}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Xavier}});
  c.loss = nn::cross_entropy(w2 * tanh(w1 * slice_batch(x, c.batch) + b1), slice_batch(y, c.batch));
  return c;
}

std::vector<std::vector<double>> values_of(const train::TrainingStep& s, const std::vector<ir::NodeRef>& nodes) {
  std::vector<std::vector<double>> out;
  for (const auto& n : nodes) out.push_back(s.ctx.get_values(n));
  return out;
}

TEST_F(LossScaling, OverflowSkipsTheStepAndHalvesTheScaleGoodStepsGrowIt) {
  Circles m = circles_model(MatmulPrecision::F16);
  // 2^40 times the loss: the logits' gradients (about 2^40 / 32) overflow f16's 65504.
  auto step = train::compile_step(runtime::Context::cpu(), m.loss,
                                  {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = m.batch, .n_batches = 1,
                                   .loss_scale = nn::LossScaleOptions{.init_scale = 0x1p40, .growth_interval = 3}});
  ASSERT_TRUE(step.loss_scaler);
  const auto& state = step.loss_scaler->state();
  EXPECT_EQ(state.scale, 0x1p40);
  const auto params = values_of(step, step.params);
  const auto momenta = values_of(step, step.optimizer_state);
  train::fit(step, {.epochs = 1});
  EXPECT_TRUE(state.last_step_skipped);
  EXPECT_EQ(state.skipped_steps, 1);
  EXPECT_EQ(state.scale, 0x1p39);
  EXPECT_EQ(values_of(step, step.params), params);
  EXPECT_EQ(values_of(step, step.optimizer_state), momenta);
  // Halving until the gradients fit in f16; the first good step updates.
  for (int k = 0; k < 40 && state.last_step_skipped; ++k) train::fit(step, {.epochs = 1});
  ASSERT_FALSE(state.last_step_skipped);
  EXPECT_EQ(state.scale, std::ldexp(1.0, 40 - static_cast<int>(state.skipped_steps)));
  EXPECT_NE(values_of(step, step.params), params);
  const double good_scale = state.scale;
  const std::int64_t skipped = state.skipped_steps;
  train::fit(step, {.epochs = 2});  // the second and third good steps: the third doubles S
  EXPECT_EQ(state.skipped_steps, skipped);
  EXPECT_EQ(state.steps, skipped + 3);
  EXPECT_EQ(state.scale, 2 * good_scale);
  EXPECT_EQ(state.good_streak, 0);
}

TEST_F(LossScaling, APowerOfTwoScaleChangesNoBitOfAnF32Run) {
  // Backprop is linear in the seed, and scaling by 2^10 commutes with every rounding (no
  // gradient here comes near f32's overflow or subnormals), so unscaling is exact.
  auto run = [](std::optional<nn::LossScaleOptions> scaling) {
    Circles m = circles_model(MatmulPrecision::F32);
    auto step = train::compile_step(runtime::Context::cpu(), m.loss,
                                    {.sgd = {.lr = 0.2, .momentum = 0.9}, .batch = m.batch, .n_batches = 8,
                                     .loss_scale = scaling});
    auto losses = train::fit(step, {.epochs = 3});
    return std::make_pair(losses, values_of(step, step.params));
  };
  const auto plain = run(std::nullopt);
  const auto scaled = run(nn::LossScaleOptions{.init_scale = 1024, .growth_interval = 1000});
  EXPECT_EQ(scaled.first, plain.first);
  EXPECT_EQ(scaled.second, plain.second);
}

TEST_F(LossScaling, RejectsBadOptionsAndDataParallelSteps) {
  Circles m = circles_model(MatmulPrecision::F16);
  auto compile = [&](nn::LossScaleOptions o) {
    return train::compile_step(runtime::Context::interpreter(), m.loss,
                               {.batch = m.batch, .n_batches = 8, .loss_scale = o});
  };
  EXPECT_THROW(compile({.backoff_factor = 1.5}), RuntimeUsageError);
  EXPECT_THROW(compile({.init_scale = 0}), RuntimeUsageError);
  // The scale is an f32 literal: 1e39 would be inf (every step skipped forever), 1e-46 zero.
  for (const double beyond_f32 : {1e39, 1e-46}) {
    try {
      compile({.init_scale = beyond_f32});
      ADD_FAILURE() << "init_scale " << beyond_f32 << " must throw";
    } catch (const RuntimeUsageError& e) {
      EXPECT_NE(std::string(e.what()).find(beyond_f32 > 1 ? "init_scale = 1e+39" : "init_scale = 1e-46"),
                std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("f32"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(compile({.init_scale = 0x1p127}).loss_scaler->state().scale, 0x1p127);
  EXPECT_THROW(compile({.growth_interval = 0}), RuntimeUsageError);
  try {
    train::data_parallel(runtime::Context::cpu(), m.loss,
                         {.batch = m.batch, .n_batches = 8, .loss_scale = nn::LossScaleOptions{}});
    ADD_FAILURE() << "data_parallel with loss scaling must throw";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("loss scaling"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
