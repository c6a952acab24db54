// Training: SGD variants against a host computation, determinism, and a model that learns.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class Training : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

/// Host reference of one SGD step (semantics-frontend.md 7).
void sgd_reference(std::vector<double>& p, std::vector<double>& m, const std::vector<double>& g,
                   const nn::SgdOptions& o) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    double d = g[i] + o.weight_decay * p[i];
    if (o.momentum > 0) {
      m[i] = o.momentum * m[i] + d;
      d = o.nesterov ? d + o.momentum * m[i] : m[i];
    }
    p[i] -= o.lr * d;
  }
}

void check_sgd(const nn::SgdOptions& options) {
  reset_tensor_state();
  config::set_override("default_prec", "f64");
  // loss = sum(w * w) / 2 has gradient w, so the update is checkable on the host.
  Tensor w = param("w", {.input = Dims{}, .output = Dims{4}, .init = {.kind = InitKind::Uniform, .low = -1, .high = 1}});
  Tensor loss = 0.5 * sum(pointmul(w, w));
  ir::StaticSymbol none{ir::fresh_symbol(), 1, "unused"};
  auto step = train::compile_step(runtime::Context::interpreter(), loss,
                                  {.sgd = options, .batch = none, .n_batches = 1});
  std::vector<double> p = step.ctx.get_values(w.value()), m(p.size(), 0.0);
  for (int k = 0; k < 5; ++k) {
    std::vector<double> g = p;  // gradient of the loss at p
    sgd_reference(p, m, g, options);
    step.ctx.run(step.step);
    const auto got = step.ctx.get_values(w.value());
    for (std::size_t i = 0; i < p.size(); ++i)
      EXPECT_NEAR(got[i], p[i], 1e-12) << "step " << k << " cell " << i;
  }
}

TEST_F(Training, PlainSgdMatchesHostReference) { check_sgd({.lr = 0.1}); }
TEST_F(Training, MomentumMatchesHostReference) { check_sgd({.lr = 0.1, .momentum = 0.9}); }
TEST_F(Training, NesterovMatchesHostReference) { check_sgd({.lr = 0.05, .momentum = 0.8, .nesterov = true}); }
TEST_F(Training, WeightDecayMatchesHostReference) { check_sgd({.lr = 0.1, .momentum = 0.5, .weight_decay = 0.01}); }

TEST_F(Training, ClippedSgdMatchesHostReference) {
  config::set_override("default_prec", "f64");
  Tensor w = param("w", {.input = Dims{}, .output = Dims{4}, .init = {.kind = InitKind::Uniform, .low = -1, .high = 1}});
  Tensor loss = 0.5 * sum(pointmul(w, w));  // gradient w
  ir::StaticSymbol none{ir::fresh_symbol(), 1, "unused"};
  const double max_norm = 0.3, lr = 0.1;
  auto step = train::compile_step(runtime::Context::interpreter(), loss,
                                  {.sgd = {.lr = lr}, .clip_grad_norm = max_norm, .batch = none});
  std::vector<double> p = step.ctx.get_values(w.value());
  for (int k = 0; k < 4; ++k) {
    double norm = 0;
    for (double x : p) norm += x * x;
    const double scale = std::min(1.0, max_norm / (std::sqrt(norm) + 1e-6));
    for (double& x : p) x -= lr * scale * x;
    step.ctx.run(step.step);
    const auto got = step.ctx.get_values(w.value());
    for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(got[i], p[i], 1e-12) << "step " << k << " cell " << i;
  }
  EXPECT_FALSE(step.adam.has_value());
}

TEST_F(Training, TheStepAndForwardRoutinesTakeTheCallersSchedule) {
  config::set_override("default_prec", "f64");
  Tensor w = param("w", {.input = Dims{}, .output = Dims{4}, .init = {.kind = InitKind::Uniform, .low = -1, .high = 1}});
  Tensor loss = 0.5 * sum(pointmul(w, w));  // gradient w
  ir::StaticSymbol none{ir::fresh_symbol(), 1, "unused"};
  std::vector<std::string> scheduled;  // the routines the schedule was asked for
  const runtime::CompileOptions serial{.schedule = runtime::ScheduleChoice::build([&](const ir::LoweredRoutine& r) {
    scheduled.push_back(r.name);
    return std::vector<schedule::Transform>{};
  })};
  auto step = train::compile_step(runtime::Context::cpu(), loss,
                                  {.sgd = {.lr = 0.5}, .batch = none, .step_compile = serial});
  EXPECT_EQ(scheduled, std::vector<std::string>{"train_step"}) << "init and the loss reset keep the default";
  std::vector<double> p = step.ctx.get_values(w.value());
  step.ctx.run(step.step);
  const auto got = step.ctx.get_values(w.value());
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(got[i], 0.5 * p[i], 1e-12) << "cell " << i;

  train::compile_forward(step.ctx, {loss}, "eval_loss", serial);
  EXPECT_EQ(scheduled.back(), "eval_loss");
  // A trace of another program is refused by the digest before anything compiles.
  const auto other = runtime::ScheduleChoice::replay({.digest = std::string(64, '0'), .steps = {}});
  EXPECT_THROW(train::compile_forward(step.ctx, {loss}, "eval_loss", {.schedule = other}), ScheduleError);
}

TEST_F(Training, RejectsBadOptimizerSettings) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{2}});
  EXPECT_THROW(nn::sgd({w}, {.lr = -1}), RuntimeUsageError);
  try {
    nn::sgd({w}, {.lr = 0.1, .nesterov = true});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nesterov needs momentum"), std::string::npos);
  }
}

TEST_F(Training, OnStepSeesEveryStepAndItsExceptionEndsFit) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{2}});
  Tensor loss = sum(pointmul(w, w));
  ir::StaticSymbol batch{ir::fresh_symbol(), 3, "batch"};
  auto step = train::compile_step(runtime::Context::interpreter(), loss,
                                  {.batch = batch, .n_batches = 3});
  std::vector<std::pair<int, std::int64_t>> seen;
  train::fit(step, {.epochs = 2, .on_step = [&](int epoch, std::int64_t b) { seen.emplace_back(epoch, b); }});
  EXPECT_EQ(seen, (std::vector<std::pair<int, std::int64_t>>{{1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}));
  struct Stop {};
  int epochs_reported = 0;
  EXPECT_THROW(train::fit(step, {.epochs = 5,
                                 .on_epoch = [&](const train::EpochReport&) { ++epochs_reported; },
                                 .on_step = [](int epoch, std::int64_t b) { if (epoch == 2 && b == 1) throw Stop{}; }}),
               Stop);
  EXPECT_EQ(epochs_reported, 1);
}

// The toy of the partial-epoch report: 4 batches of 2 rows, x = 1, batch 0 y = 0, batches 1-3
// y = 10, loss sum (w x - y)^2. Trained on every batch, w moves toward the full-data optimum 7.5
// (cyclic SGD ends each epoch a little above it); trained on batch 0 alone it stays at 0.
Tensor partial_epoch_toy_loss(const ir::StaticSymbol& batch, const Tensor& w) {
  const std::vector<double> ys{0, 0, 10, 10, 10, 10, 10, 10};
  Tensor x = literal("toy_x", std::vector<double>(8, 1.0), {.batch = Dims{4, 2}, .output = Dims{}});
  Tensor y = literal("toy_y", ys, {.batch = Dims{4, 2}, .output = Dims{}});
  Tensor err = pointmul(w, slice_batch(x, batch)) - slice_batch(y, batch);
  return sum(pointmul(err, err));
}

TEST_F(Training, NBatchesDefaultsToTheBatchSymbolsRangeSoAnEpochSeesEveryBatch) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{}, .init = {.kind = InitKind::Constant}});
  ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  auto step = train::compile_step(runtime::Context::interpreter(), partial_epoch_toy_loss(batch, w),
                                  {.sgd = {.lr = 0.05}, .batch = batch});
  EXPECT_EQ(step.n_batches, 4);
  std::vector<std::int64_t> seen;
  train::fit(step, {.epochs = 20, .on_step = [&](int epoch, std::int64_t b) { if (epoch == 1) seen.push_back(b); }});
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2, 3}));
  // Each step moves w a fifth of the way to its batch's y (gradient 4 (w - y), lr 0.05): on the
  // host, the same 20 epochs over all four batches. The cycle ends at 8.27 after batch 3.
  double expected = 0;
  for (int epoch = 0; epoch < 20; ++epoch)
    for (const double y : {0.0, 10.0, 10.0, 10.0}) expected -= 0.2 * (expected - y);
  const double got = step.ctx.get_values(w.value()).at(0);
  EXPECT_NEAR(got, expected, 1e-4);
  EXPECT_NEAR(got, 7.5, 1.0);
}

TEST_F(Training, NBatchesAboveTheBatchSymbolsRangeIsAnErrorNamingBoth) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{}, .init = {.kind = InitKind::Constant}});
  ir::StaticSymbol batch{ir::fresh_symbol(), 4, "toy_batch"};
  Tensor loss = partial_epoch_toy_loss(batch, w);
  try {
    train::compile_step(runtime::Context::interpreter(), loss, {.batch = batch, .n_batches = 5});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("n_batches = 5 exceeds the range 4"), std::string::npos) << message;
    EXPECT_NE(message.find("toy_batch"), std::string::npos) << message;
  }
  // A shorter epoch is the caller's choice; no batch symbol is one step; an unknown range needs n_batches.
  EXPECT_EQ(train::compile_step(runtime::Context::interpreter(), loss, {.batch = batch, .n_batches = 2}).n_batches, 2);
  Tensor plain = sum(pointmul(w, w));
  EXPECT_EQ(train::compile_step(runtime::Context::interpreter(), plain, {}).n_batches, 1);
  ir::StaticSymbol unknown{ir::fresh_symbol(), 0, "unknown"};
  EXPECT_THROW(train::compile_step(runtime::Context::interpreter(), plain, {.batch = unknown}), RuntimeUsageError);
  EXPECT_THROW(train::compile_step(runtime::Context::interpreter(), plain, {.batch = batch, .n_batches = -1}),
               RuntimeUsageError);
}

// progress_bar is auto, a boolean (any case, as every listed key), or a ConfigError naming both.
TEST_F(Training, TheProgressBarKeyIsAutoOrABoolean) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{2}});
  Tensor loss = sum(pointmul(w, w));
  ir::StaticSymbol batch{ir::fresh_symbol(), 1, "batch"};
  auto step = train::compile_step(runtime::Context::interpreter(), loss, {.batch = batch, .n_batches = 1});
  for (const char* ok : {"AUTO", " Auto ", "false", "OFF", "0"}) {
    config::set_override("progress_bar", ok);
    EXPECT_NO_THROW(train::fit(step, {.epochs = 1})) << ok;
  }
  config::set_override("progress_bar", "sometimes");
  try {
    train::fit(step, {.epochs = 1});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("progress_bar"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto"), std::string::npos) << e.what();
  }
}

struct RunResult {
  std::vector<double> losses;
  double accuracy;
};

RunResult train_circles(runtime::Context ctx, int epochs) {
  reset_tensor_state();
  auto data = datasets::circles({.samples = 256, .seed = 3});
  ir::StaticSymbol batch{ir::fresh_symbol(), 8, "batch"};
  Tensor x = literal("x", data.features, {.batch = Dims{8, 32}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{8, 32}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{16}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Xavier}});
  auto model = [&](const Tensor& in) { return w2 * tanh(w1 * in + b1); };
  Tensor loss = nn::cross_entropy(model(slice_batch(x, batch)), slice_batch(y, batch));
  auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.2, .momentum = 0.9}, .batch = batch, .n_batches = 8});
  RunResult r;
  r.losses = train::fit(step, {.epochs = epochs});
  Tensor all = literal("x_all", data.features, {.batch = Dims{256}, .output = Dims{2}});
  Tensor logits = model(all);
  auto eval = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(eval);
  r.accuracy = nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2);
  return r;
}

TEST_F(Training, CirclesModelLearns) {
  auto r = train_circles(runtime::Context::cpu(), 60);
  EXPECT_LT(r.losses.back(), 0.5 * r.losses.front());
  EXPECT_GE(r.accuracy, 0.95);
}

TEST_F(Training, BatchNormMlpLearnsWithAdamAndEvaluatesOnRunningStatistics) {
  auto data = datasets::circles({.samples = 256, .seed = 5});
  ir::StaticSymbol batch{ir::fresh_symbol(), 8, "batch"};
  Tensor x = literal("x", data.features, {.batch = Dims{8, 32}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{8, 32}, .output = Dims{2}});
  nn::Linear fc1("fc1", {16}, /*bias=*/false), fc2("fc2", {2});
  nn::BatchNorm1d bn("bn", {.num_features = 16});
  auto model = [&](const Tensor& in, nn::Mode mode) { return fc2(tanh(bn(fc1(in), mode))); };
  Tensor loss = nn::cross_entropy(model(slice_batch(x, batch), nn::Mode::Train), slice_batch(y, batch));
  auto step = train::compile_step(runtime::Context::cpu(), loss,
                                  {.optimizer = train::Optimizer::Adam, .adam = {.schedule = {.lr = 0.02}},
                                   .batch = batch, .n_batches = 8});
  auto losses = train::fit(step, {.epochs = 30});
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  // The running statistics moved away from their initial 0 / 1.
  EXPECT_NE(step.ctx.get_values(bn.running_mean.value()).at(0), 0.0);
  Tensor all = literal("x_all", data.features, {.batch = Dims{256}, .output = Dims{2}});
  Tensor logits = model(all, nn::Mode::Eval);
  auto eval = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(eval);
  EXPECT_GE(nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2), 0.95);
}

TEST_F(Training, SameSeedSameNumbersBitwise) {
  auto a = train_circles(runtime::Context::cpu(), 5);
  auto b = train_circles(runtime::Context::cpu(), 5);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "epoch " << i;
}

TEST_F(Training, InterpreterAndCBackendAgreeBitwise) {
  auto a = train_circles(runtime::Context::cpu(), 3);
  auto b = train_circles(runtime::Context::interpreter(), 3);
  for (std::size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "epoch " << i;
}

TEST_F(Training, DifferentSeedDifferentInit) {
  auto a = train_circles(runtime::Context::cpu(), 1);
  config::set_override("seed", "7");
  auto b = train_circles(runtime::Context::cpu(), 1);
  EXPECT_NE(a.losses[0], b.losses[0]);
}

TEST(Datasets, MoonsAreSeededAndBalanced) {
  auto a = datasets::moons({.samples = 100, .seed = 1});
  auto b = datasets::moons({.samples = 100, .seed = 1});
  auto c = datasets::moons({.samples = 100, .seed = 2});
  EXPECT_EQ(a.features, b.features);
  EXPECT_NE(a.features, c.features);
  int ones = 0;
  for (int l : a.labels) ones += l;
  EXPECT_EQ(ones, 50);
  EXPECT_EQ(a.one_hot().size(), 200u);
  EXPECT_THROW(datasets::moons({.samples = 1}), RuntimeUsageError);
}

TEST(Accuracy, CountsArgMaxMatches) {
  EXPECT_DOUBLE_EQ(nn::accuracy({0.1, 0.9, 2.0, 1.0, 0.0, 3.0}, {1, 0, 0}, 2), 2.0 / 3.0);
  EXPECT_THROW(nn::accuracy({1.0}, {0, 1}, 2), RuntimeUsageError);
}

}  // namespace
}  // namespace cannl
