// Training checkpoints (src/nn/training_checkpoint.cpp) keep everything a resumed run needs: a
// BatchNorm model's running statistics (resumed in a fresh context, one more epoch evaluates
// bitwise as the straight run) and the loss scaler's scale and good-step streak (the resumed run goes on
// exactly as the straight one). Data-parallel resumes: data_parallel_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "cannl/cannl.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class TrainingCheckpoint : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override {
    config::clear_overrides();
    std::filesystem::remove(path_);
  }
  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("cannl_training_ckpt_" + std::to_string(::getpid()) + ".safetensors");
};

/// Linear -> BatchNorm -> tanh -> Linear on 4 batches of 16 circle points; `eval` the whole
/// data set through the running statistics. Built afresh (same labels, same seed) each call.
struct BatchNormModel {
  ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  Tensor loss, eval;
};

BatchNormModel batch_norm_model() {
  reset_tensor_state();
  BatchNormModel m;
  auto data = datasets::circles({.samples = 64, .seed = 5});
  Tensor x = literal("x", data.features, {.batch = Dims{4, 16}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{4, 16}, .output = Dims{2}});
  nn::Linear fc1("fc1", {8}, /*bias=*/false), fc2("fc2", {2});
  nn::BatchNorm1d bn("bn", {.num_features = 8});
  auto model = [&](const Tensor& in, nn::Mode mode) { return fc2(tanh(bn(fc1(in), mode))); };
  m.loss = nn::cross_entropy(model(slice_batch(x, m.batch), nn::Mode::Train), slice_batch(y, m.batch));
  m.eval = model(literal("x_all", data.features, {.batch = Dims{64}, .output = Dims{2}}), nn::Mode::Eval);
  return m;
}

/// One more epoch, then the evaluation outputs (through the running statistics).
std::vector<double> train_one_epoch_and_evaluate(train::TrainingStep& step, const Tensor& eval) {
  train::fit(step, {.epochs = 1});
  // Compiled after the step, it runs after it: a fresh context's restore alone would not do
  // (the context orders routines by what they write, and a restore is no routine).
  step.ctx.run(train::compile_forward(step.ctx, {eval}, "evaluate"));
  return step.ctx.get_values(eval.value());
}

train::TrainingStep compile_batch_norm_step(const BatchNormModel& m) {
  return train::compile_step(runtime::Context::interpreter(), m.loss,
                             {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = m.batch});
}

TEST_F(TrainingCheckpoint, ABatchNormModelResumesItsRunningStatistics) {
  std::vector<double> straight_outputs, saved_mean;
  {
    BatchNormModel m = batch_norm_model();
    auto step = compile_batch_norm_step(m);
    ASSERT_EQ(step.model_state.size(), 2u);  // running mean and variance
    train::fit(step, {.epochs = 3});
    train::save_training_checkpoint(step, path_);
    saved_mean = step.ctx.get_values(step.model_state[0]);
    straight_outputs = train_one_epoch_and_evaluate(step, m.eval);
  }
  BatchNormModel m = batch_norm_model();
  auto step = compile_batch_norm_step(m);
  train::restore_training_checkpoint(step, path_);
  EXPECT_EQ(step.ctx.get_values(step.model_state[0]), saved_mean);
  EXPECT_EQ(train_one_epoch_and_evaluate(step, m.eval), straight_outputs);
}

TEST_F(TrainingCheckpoint, AFileWithoutTheModelStateIsAFormatErrorNamingIt) {
  BatchNormModel m = batch_norm_model();
  auto step = train::compile_step(runtime::Context::interpreter(), m.loss, {.sgd = {.lr = 0.1}, .batch = m.batch});
  // A checkpoint as written before the model state was kept: parameters and optimizer state only.
  std::vector<io::CheckpointEntry> old_entries;
  for (const auto& node : step.params) old_entries.push_back({"params/" + node->label, node});
  io::save_checkpoint(step.ctx, old_entries, path_);
  try {
    train::restore_training_checkpoint(step, path_);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("state/bn_running_mean"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("written before checkpoints kept it"), std::string::npos) << e.what();
  }
}

/// tanh MLP 2 -> 8 -> 2 on 4 batches of 16 circle points with dynamic loss scaling; S grows
/// every 3 good steps, so after an epoch S and the streak both differ from a fresh scaler's.
struct ScaledModel {
  ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  Tensor loss;
};

ScaledModel scaled_model() {
  reset_tensor_state();
  ScaledModel m;
  auto data = datasets::circles({.samples = 64, .seed = 3});
  Tensor x = literal("x", data.features, {.batch = Dims{4, 16}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{4, 16}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{8}, .init = {.kind = InitKind::Kaiming}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Xavier}});
  m.loss = nn::cross_entropy(w2 * tanh(w1 * slice_batch(x, m.batch)), slice_batch(y, m.batch));
  return m;
}

train::TrainingStep compile_scaled(const ScaledModel& m) {
  return train::compile_step(runtime::Context::interpreter(), m.loss,
                             {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = m.batch,
                              .loss_scale = nn::LossScaleOptions{.init_scale = 1024, .growth_interval = 3}});
}

TEST_F(TrainingCheckpoint, TheLossScaleAndItsStreakResume) {
  nn::LossScaleState saved;
  double straight_loss = 0;
  {
    ScaledModel m = scaled_model();
    auto step = compile_scaled(m);
    train::fit(step, {.epochs = 1});
    saved = step.loss_scaler->state();
    ASSERT_EQ(saved.scale, 2048);  // grew once after 3 good steps, a streak of 1 since
    ASSERT_EQ(saved.good_streak, 1);
    train::save_training_checkpoint(step, path_);
    straight_loss = train::fit(step, {.epochs = 1}).at(0);
  }
  ScaledModel m = scaled_model();
  auto step = compile_scaled(m);
  train::restore_training_checkpoint(step, path_);
  const nn::LossScaleState& resumed = step.loss_scaler->state();
  EXPECT_EQ(resumed.scale, saved.scale);
  EXPECT_EQ(resumed.good_streak, saved.good_streak);
  EXPECT_EQ(resumed.steps, saved.steps);
  EXPECT_EQ(resumed.skipped_steps, saved.skipped_steps);
  EXPECT_EQ(train::fit(step, {.epochs = 1}).at(0), straight_loss);
  EXPECT_EQ(step.loss_scaler->state().scale, 4096);  // the streak went on: 1 + 2 more steps
}

}  // namespace
}  // namespace cannl
