// BatchNorm's running statistics: advanced by the training step (compile_step), read by a
// forward-only routine built in eval mode, against a host computation; and its usage errors.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"
#include "tensor/fresh_tensors.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class BatchNormTest : public testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f64"};
};

constexpr std::int64_t kRows = 4, kFeatures = 2;
const std::vector<double> kX = {1, 2, 3, 5, -1, 0, 2, 7};  // [rows, features]

/// Per-feature batch mean and unbiased variance of kX.
std::pair<std::vector<double>, std::vector<double>> host_statistics() {
  std::vector<double> mean(kFeatures, 0.0), var(kFeatures, 0.0);
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kFeatures; ++c) mean[c] += kX[r * kFeatures + c] / kRows;
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kFeatures; ++c)
      var[c] += std::pow(kX[r * kFeatures + c] - mean[c], 2) / (kRows - 1);
  return {mean, var};
}

TEST_F(BatchNormTest, TrainingStepAdvancesRunningStatisticsAndEvalModeUsesThem) {
  const double momentum = 0.2;
  nn::BatchNorm1d bn("bn", {.num_features = kFeatures, .momentum = momentum});
  Tensor x = literal("x", kX, {.batch = Dims{kRows}, .output = Dims{kFeatures}});
  Tensor w = param("w", {.input = Dims{}, .output = Dims{kFeatures}});
  Tensor y_train = bn(x);
  // Squared: a weighted sum of normalized values has a zero gradient for gamma.
  Tensor loss = sum(pointmul(pointmul(y_train, y_train), w));
  ir::StaticSymbol unused{ir::fresh_symbol(), 1, "unused"};
  auto step = train::compile_step(runtime::Context::cpu(), loss, {.sgd = {.lr = 0.1}, .batch = unused});
  const auto [mean, var] = host_statistics();
  for (int k = 1; k <= 3; ++k) {
    step.ctx.run(step.step);
    // The batch statistics do not change (x is fixed), so the running ones follow a closed form.
    const double kept = std::pow(1 - momentum, k);
    const auto running_mean = step.ctx.get_values(bn.running_mean.value());
    const auto running_var = step.ctx.get_values(bn.running_var.value());
    for (std::int64_t c = 0; c < kFeatures; ++c) {
      EXPECT_NEAR(running_mean[c], (1 - kept) * mean[c], 1e-12) << "step " << k << " feature " << c;
      EXPECT_NEAR(running_var[c], kept + (1 - kept) * var[c], 1e-12) << "step " << k << " feature " << c;
    }
  }
  const std::vector<double> probe = {0.5, -3};
  Tensor y = bn(literal("probe", probe, {.batch = Dims{1}, .output = Dims{kFeatures}}), nn::Mode::Eval);
  auto eval = train::compile_forward(step.ctx, {y}, "bn_eval");
  step.ctx.run(eval);
  const auto got = step.ctx.get_values(y.value());
  const auto gamma = step.ctx.get_values(bn.gamma.value()), beta = step.ctx.get_values(bn.beta.value());
  const auto running_mean = step.ctx.get_values(bn.running_mean.value());
  const auto running_var = step.ctx.get_values(bn.running_var.value());
  for (std::int64_t c = 0; c < kFeatures; ++c)
    EXPECT_NEAR(got[c], gamma[c] * (probe[c] - running_mean[c]) / std::sqrt(running_var[c] + 1e-5) + beta[c],
                1e-12) << "feature " << c;
  // gamma and beta were trained: the check above is not the identity.
  EXPECT_NE(gamma[0], 1.0);
}

TEST_F(BatchNormTest, EvalModeInAFreshContextStartsFromZeroMeanUnitVariance) {
  nn::BatchNorm2d bn("bn", {.num_features = 2});
  const std::vector<double> values = {1, -2, 3, 4, 0.5, 6, -7, 8};  // batch 1 | 2, 2, 2
  Tensor y = bn(literal("x", values, {.batch = Dims{1}, .output = Dims{2, 2, 2}}), nn::Mode::Eval);
  auto ctx = runtime::Context::interpreter();
  auto init = ctx.compile(init_params_code(params_of({y})), "init");
  ctx.run(init);
  auto forward = train::compile_forward(ctx, {y}, "bn_eval");
  ctx.run(forward);
  const auto got = ctx.get_values(y.value());
  ASSERT_EQ(got.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(got[i], values[i] / std::sqrt(1 + 1e-5), 1e-12) << "cell " << i;
}

TEST_F(BatchNormTest, RejectsBadOptions) {
  try {
    nn::BatchNorm1d bn("bn", {.num_features = 0});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("num_features must be > 0"), std::string::npos) << e.what();
  }
  try {
    nn::BatchNorm2d bn("bn", {.num_features = 3, .momentum = 1.5});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("momentum in [0, 1]"), std::string::npos) << e.what();
  }
}

TEST_F(BatchNormTest, TrainingOnOneValuePerFeatureIsAShapeError) {
  // PyTorch refuses it too: the unbiased running variance would divide by n - 1 = 0.
  nn::BatchNorm1d bn("bn", {.num_features = 2});
  Tensor y = bn(literal("x", {1, 2}, {.batch = Dims{1}, .output = Dims{2}}));
  auto ctx = runtime::Context::interpreter();
  try {
    train::compile_forward(ctx, {y}, "bn_one_row");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("needs more than 1 value per statistic"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cannl
