// Data-parallel training on the devices of a multi-device CPU context: 1, 2 and 4 devices learn
// what one device learns with the same global batch; checkpoints resume a run exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "cannl/cannl.h"
#include "nn/moons_replicas.h"

namespace cannl {
namespace {

constexpr std::int64_t kGlobalBatch = 16;
constexpr std::int64_t kGlobalSteps = 8;

class DataParallelTraining : public testing::Test {
 protected:
  void SetUp() override {
    reset_tensor_state();
    config::set_override("cc_threads", "1");  // the devices are the parallelism here
  }
  void TearDown() override { config::clear_overrides(); }
};

using test_models::MoonsModel;
using test_models::sgd_options;

MoonsModel moons_model(int replicas) {
  return test_models::moons_model(replicas, {.global_batch = kGlobalBatch, .global_steps = kGlobalSteps, .seed = 3});
}

std::vector<double> single_device_losses(int epochs) {
  reset_tensor_state();
  const MoonsModel m = moons_model(1);
  auto step = train::compile_step(runtime::Context::cpu(), m.loss, sgd_options(m));
  return train::fit(step, {.epochs = epochs});
}

std::vector<double> data_parallel_losses(int devices, int epochs) {
  reset_tensor_state();
  const MoonsModel m = moons_model(devices);
  auto step = train::data_parallel(runtime::Context::cpu_devices(devices), m.loss, sgd_options(m));
  EXPECT_EQ(step.n_batches, kGlobalSteps);
  EXPECT_EQ(step.parallel->replicas(), devices);
  return train::fit(step, {.epochs = epochs});
}

// The gradients of a split batch are summed in another order than one device sums the whole
// batch, so the losses agree within rounding (relative 1e-5 after 24 SGD steps with momentum),
// not bitwise; one replica computes exactly what compile_step computes.
TEST_F(DataParallelTraining, OneTwoAndFourDevicesLearnWhatOneDeviceLearns) {
  const auto reference = single_device_losses(3);
  ASSERT_LT(reference.back(), reference.front());  // it learns
  EXPECT_EQ(data_parallel_losses(1, 3), reference);
  for (int devices : {2, 4}) {
    const auto losses = data_parallel_losses(devices, 3);
    ASSERT_EQ(losses.size(), reference.size());
    for (std::size_t e = 0; e < losses.size(); ++e)
      EXPECT_NEAR(losses[e], reference[e], 1e-5 * std::abs(reference[e])) << devices << " devices, epoch " << e + 1;
  }
}

TEST_F(DataParallelTraining, ReplicasHoldEqualParameters) {
  const MoonsModel m = moons_model(2);
  auto devices = runtime::Context::cpu_devices(2);
  auto step = train::data_parallel(devices, m.loss, sgd_options(m));
  train::fit(step, {.epochs = 1});
  for (const auto& p : step.params)
    EXPECT_EQ(devices.device(0).get_values(p), devices.device(1).get_values(p)) << p->label;
}

TEST_F(DataParallelTraining, MicroBatchesMustSplitIntoGlobalSteps) {
  const MoonsModel m = moons_model(1);
  train::StepOptions options = sgd_options(m);
  options.n_batches = 7;
  EXPECT_THROW(train::data_parallel(runtime::Context::cpu_devices(2), m.loss, options), RuntimeUsageError);
}

// NCCL averages gradients between CUDA devices only (tests/backends/gpu/cuda_multi_device_test.cpp
// runs it on mock CUDA and NCCL libraries); asking for it elsewhere is named before compiling.
TEST_F(DataParallelTraining, NcclIsForCudaDevicesOnly) {
  const MoonsModel m = moons_model(2);
  config::set_override("gpu_all_reduce", "nccl");
  try {
    train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
    ADD_FAILURE() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL needs CUDA devices"), std::string::npos) << e.what();
  }
  config::set_override("gpu_all_reduce", "mpi");
  EXPECT_THROW(train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m)), ConfigError);
}

TEST_F(DataParallelTraining, CheckpointResumesTheRunExactly) {
  const auto path = std::filesystem::temp_directory_path() / ("cannl_dp_" + std::to_string(::getpid()) + ".safetensors");
  std::vector<double> straight;
  {
    const MoonsModel m = moons_model(2);
    auto step = train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
    straight = train::fit(step, {.epochs = 3});
  }
  {
    reset_tensor_state();
    const MoonsModel m = moons_model(2);
    auto step = train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
    train::fit(step, {.epochs = 2});
    train::save_training_checkpoint(step, path, {{"epochs", "2"}});
  }
  reset_tensor_state();
  const MoonsModel m = moons_model(2);
  auto step = train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
  const auto metadata = train::restore_training_checkpoint(step, path);
  EXPECT_EQ(metadata.at("epochs"), "2");
  EXPECT_EQ(metadata.at("global_steps"), std::to_string(2 * kGlobalSteps));
  EXPECT_EQ(train::fit(step, {.epochs = 1}).at(0), straight.at(2));
  std::filesystem::remove(path);
}


// Dropout's steps-done counter (nn::uniform_at) advances once per global step on every replica:
// one replica draws the masks compile_step draws (bitwise its losses), two replicas keep equal
// counters, and a checkpoint (replica 0's counter) resumes a two-replica run exactly.
TEST_F(DataParallelTraining, DropoutCountsGlobalStepsOnEveryReplica) {
  const test_models::MoonsShape shape{.global_batch = kGlobalBatch, .global_steps = kGlobalSteps, .seed = 3,
                                      .input_dropout = 0.25};
  std::vector<double> one_device;
  {
    const MoonsModel m = test_models::moons_model(1, shape);
    auto step = train::compile_step(runtime::Context::cpu(), m.loss, sgd_options(m));
    one_device = train::fit(step, {.epochs = 2});
  }
  reset_tensor_state();
  {
    const MoonsModel m = test_models::moons_model(1, shape);
    auto step = train::data_parallel(runtime::Context::cpu_devices(1), m.loss, sgd_options(m));
    EXPECT_EQ(train::fit(step, {.epochs = 2}), one_device);
  }
  const auto path = std::filesystem::temp_directory_path() / ("cannl_dp_drop_" + std::to_string(::getpid()) + ".safetensors");
  std::vector<double> straight;
  {
    reset_tensor_state();
    const MoonsModel m = test_models::moons_model(2, shape);
    auto devices = runtime::Context::cpu_devices(2);
    auto step = train::data_parallel(devices, m.loss, sgd_options(m));
    straight = train::fit(step, {.epochs = 3});
    ASSERT_EQ(step.model_state.size(), 1u);
    for (int d : {0, 1})
      EXPECT_EQ(devices.device(d).get_values(step.model_state[0]), std::vector<double>{3.0 * kGlobalSteps}) << d;
  }
  {
    reset_tensor_state();
    const MoonsModel m = test_models::moons_model(2, shape);
    auto step = train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
    train::fit(step, {.epochs = 2});
    train::save_training_checkpoint(step, path);
  }
  reset_tensor_state();
  const MoonsModel m = test_models::moons_model(2, shape);
  auto step = train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m));
  train::restore_training_checkpoint(step, path);
  EXPECT_EQ(train::fit(step, {.epochs = 1}).at(0), straight.at(2));
  std::filesystem::remove(path);
}


}  // namespace
}  // namespace cannl
