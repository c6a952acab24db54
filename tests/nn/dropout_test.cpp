// Dropout: counter-based masks keyed by the step symbol and the training steps done, inverted
// scaling, identity cases; under train::fit fresh masks every global step (also when the batch
// symbol comes round again), the same bits after a checkpoint resume and on the C backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "cannl/cannl.h"
#include "cannl/nn/functional.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class Dropout : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

TEST_F(Dropout, MasksChangePerStepAndRepeatPerStep) {
  const double rate = 0.25;
  ir::StaticSymbol step{ir::fresh_symbol(), 100, "step"};
  Tensor x = literal("x", std::vector<double>(4000, 2.0), {.batch = Dims{4000}});
  Tensor y = nn::dropout(x, step, {.rate = rate, .stream = "drop"});
  auto ctx = runtime::Context::interpreter();
  auto routine = train::compile_forward(ctx, {y}, "dropout");
  auto run_at = [&](std::int64_t s) {
    const std::vector<std::int64_t> statics = {s};
    ctx.run(routine, statics);
    return ctx.get_values(y.value());
  };
  const auto first = run_at(3), second = run_at(4), again = run_at(3);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, second);
  std::size_t zeros = 0;
  for (double v : first) {
    EXPECT_TRUE(v == 0.0 || std::abs(v - 2.0 / (1 - rate)) < 1e-6) << v;
    zeros += v == 0.0;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 4000.0, rate, 0.03);
}

TEST_F(Dropout, IdentityWhenRateZeroOrNotTraining) {
  ir::StaticSymbol step{ir::fresh_symbol(), 10, "step"};
  Tensor x = literal("x", {1, 2, 3}, {.batch = Dims{3}});
  EXPECT_EQ(nn::dropout(x, step, {.rate = 0.0}).id(), x.id());
  EXPECT_EQ(nn::dropout(x, step, {.rate = 0.5, .training = false}).id(), x.id());
}

TEST_F(Dropout, RejectsRateOutsideUnitInterval) {
  ir::StaticSymbol step{ir::fresh_symbol(), 10, "step"};
  Tensor x = literal("x", {1, 2, 3}, {.batch = Dims{3}});
  try {
    nn::dropout(x, step, {.rate = 1.0});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rate must lie in [0, 1)"), std::string::npos);
  }
}


/// A 2 -> 16 -> 2 MLP on 2 batches of 32 half-moons points with dropout on its hidden layer
/// (rate 0.5, stream "hidden_drop"): the masks are all that changes a frozen model's loss.
struct DropoutMlp {
  ir::StaticSymbol batch{ir::fresh_symbol(), 2, "batch"};
  Tensor loss;
};

DropoutMlp dropout_mlp(double rate = 0.5) {
  reset_tensor_state();
  DropoutMlp m;
  const auto data = datasets::moons({.samples = 64, .noise = 0.1, .seed = 42});
  Tensor x = slice_batch(literal("x", data.features, {.batch = Dims{2, 32}, .output = Dims{2}}), m.batch);
  Tensor y = slice_batch(literal("y", data.one_hot(), {.batch = Dims{2, 32}, .output = Dims{2}}), m.batch);
  Tensor w1 = param("w1", {.output = Dims{16}, .init = {.kind = InitKind::Kaiming}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor hidden = nn::dropout(relu(w1 * x), m.batch, {.rate = rate, .stream = "hidden_drop"});
  m.loss = nn::cross_entropy(w2 * hidden, y);
  return m;
}

train::TrainingStep dropout_step(runtime::Context ctx, const DropoutMlp& m, double lr) {
  return train::compile_step(std::move(ctx), m.loss, {.sgd = {.lr = lr, .momentum = 0.9}, .batch = m.batch});
}

class DropoutTraining : public Dropout {
 protected:
  void TearDown() override {
    Dropout::TearDown();
    std::filesystem::remove(path_);
  }
  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("cannl_dropout_ckpt_" + std::to_string(::getpid()) + ".safetensors");
};

// With lr = 0 the model is frozen: the epoch losses differ exactly when the masks of the same two
// batches differ from one epoch to the next (without dropout they are equal: the control).
TEST_F(DropoutTraining, MasksDifferBetweenEpochsForTheSameBatch) {
  const DropoutMlp m = dropout_mlp();
  auto step = dropout_step(runtime::Context::interpreter(), m, 0.0);
  const auto losses = train::fit(step, {.epochs = 3});
  EXPECT_NE(losses[0], losses[1]);
  EXPECT_NE(losses[1], losses[2]);
  EXPECT_NE(losses[0], losses[2]);
  ASSERT_EQ(step.model_state.size(), 1u);  // the stream's steps-done counter
  EXPECT_EQ(step.model_state[0]->label, "hidden_drop_steps_done");
  EXPECT_EQ(step.ctx.get_values(step.model_state[0]), std::vector<double>{6.0});  // 3 epochs x 2 batches

  const DropoutMlp plain = dropout_mlp(0.0);
  auto frozen = dropout_step(runtime::Context::interpreter(), plain, 0.0);
  const auto same = train::fit(frozen, {.epochs = 2});
  EXPECT_EQ(same[0], same[1]);
}

// The steps-done counter is model state: a run resumed from a checkpoint (a fresh context, the
// model rebuilt) draws the masks the uninterrupted run draws, so its losses are bitwise the same.
TEST_F(DropoutTraining, AResumedRunDrawsTheMasksOfAnUninterruptedOne) {
  std::vector<double> straight;
  {
    const DropoutMlp m = dropout_mlp();
    auto step = dropout_step(runtime::Context::cpu(), m, 0.2);
    straight = train::fit(step, {.epochs = 4});
  }
  {
    const DropoutMlp m = dropout_mlp();
    auto step = dropout_step(runtime::Context::cpu(), m, 0.2);
    train::fit(step, {.epochs = 2});
    train::save_training_checkpoint(step, path_);
  }
  const DropoutMlp m = dropout_mlp();
  auto step = dropout_step(runtime::Context::cpu(), m, 0.2);
  train::restore_training_checkpoint(step, path_);
  EXPECT_EQ(step.ctx.get_values(step.model_state.at(0)), std::vector<double>{4.0});
  const auto resumed = train::fit(step, {.epochs = 2});
  EXPECT_EQ(resumed, std::vector<double>(straight.begin() + 2, straight.end()));
}

// The key (stream, step, steps done) and the draws on the C backend are the interpreter's bits:
// the same training losses, and the same masks at a steps-done count past 2^32 (its high word).
TEST_F(DropoutTraining, TheCBackendDrawsTheInterpretersMasks) {
  std::vector<double> losses[2];
  std::vector<double> masks[2];
  for (const int compiled : {0, 1}) {
    const DropoutMlp m = dropout_mlp();
    auto step = dropout_step(compiled ? runtime::Context::cpu() : runtime::Context::interpreter(), m, 0.2);
    losses[compiled] = train::fit(step, {.epochs = 2});
    step.ctx.set_values(step.model_state.at(0), std::vector<double>{0x1p40 + 3});
    Tensor x = literal("ones", std::vector<double>(1000, 1.0), {.batch = Dims{1000}});
    Tensor y = nn::dropout(x, m.batch, {.rate = 0.5, .stream = "probe"});
    auto forward = train::compile_forward(step.ctx, {y}, "probe");
    const std::int64_t batch[] = {1};
    step.ctx.run(forward, batch);
    masks[compiled] = step.ctx.get_values(y.value());
  }
  EXPECT_EQ(losses[1], losses[0]);
  EXPECT_EQ(masks[1], masks[0]);
}

TEST_F(DropoutTraining, TwoSitesOfOneStreamAreAnError) {
  ir::StaticSymbol batch{ir::fresh_symbol(), 1, "batch"};
  Tensor w = param("w", {.output = Dims{4}, .init = {.kind = InitKind::Kaiming}});
  Tensor x = literal("x", std::vector<double>(8, 1.0), {.batch = Dims{2}, .output = Dims{4}});
  Tensor h = nn::dropout(pointmul(nn::dropout(x, batch, {.rate = 0.5}), w), batch, {.rate = 0.5});
  try {
    train::compile_step(runtime::Context::interpreter(), sum(h), {.sgd = {.lr = 0.1}, .batch = batch});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'dropout_steps_done' is drawn by two uniform_at (dropout) sites"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
