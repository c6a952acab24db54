// Data-parallel training on the devices of a multi-device CPU context: 1, 2 and 4 devices learn
// what one device learns with the same global batch; checkpoints resume a run exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <span>
#include <string_view>
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


/// Rank `rank` of a two-process run whose other process exists only as what it adds to every
/// all-reduce (`peer`): enough for data_parallel's setup, which exchanges the device counts.
class InjectedPeer : public runtime::Communicator {
 public:
  InjectedPeer(int rank, std::vector<double> peer) : rank_(rank), peer_(std::move(peer)) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void allreduce_sum(std::span<double> values, std::string_view what) override {
    if (values.size() != peer_.size())
      throw InternalError("InjectedPeer: no injected values for '" + std::string(what) + "'");
    for (std::size_t i = 0; i < values.size(); ++i) values[i] += peer_[i];
  }
  void allreduce_sum(std::span<float>, std::string_view what) override {
    throw InternalError("InjectedPeer: no injected values for '" + std::string(what) + "'");
  }
  void barrier(std::string_view) override {}
  void stop_other_processes(int) override {}
  std::string describe() const override { return "rank " + std::to_string(rank_) + " of 2 (the other injected)"; }

 private:
  int rank_;
  std::vector<double> peer_;
};

void expect_device_count_error(const std::function<void()>& call, const std::string& counts) {
  try {
    call();
    ADD_FAILURE() << "expected RuntimeUsageError naming " << counts;
  } catch (const RuntimeUsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the processes run different numbers of local devices (" + counts + " device(s))"),
              std::string::npos) << message;
    EXPECT_NE(message.find("--devices"), std::string::npos) << message;
  }
}

TEST_F(DataParallelTraining, RanksWithDifferentDeviceCountsAreNamedAtSetup) {
  EXPECT_NO_THROW(train::check_equal_device_counts(std::vector<int>{2, 2, 2}));
  EXPECT_NO_THROW(train::check_equal_device_counts(std::vector<int>{1}));
  expect_device_count_error([] { train::check_equal_device_counts(std::vector<int>{2, 2, 1}); },
                            "rank 0 has 2, rank 1 has 2, rank 2 has 1");
  // Through data_parallel: this process is rank 0 with one device, its peer reports two (and
  // rank 1 with two devices against a peer of one), so both ranks throw alike.
  const MoonsModel m = moons_model(2);
  expect_device_count_error(
      [&] {
        train::data_parallel(runtime::Context::cpu_devices(1), m.loss, sgd_options(m),
                             {.communicator = std::make_shared<InjectedPeer>(0, std::vector<double>{0, 2})});
      },
      "rank 0 has 1, rank 1 has 2");
  expect_device_count_error(
      [&] {
        train::data_parallel(runtime::Context::cpu_devices(2), m.loss, sgd_options(m),
                             {.communicator = std::make_shared<InjectedPeer>(1, std::vector<double>{1, 0})});
      },
      "rank 0 has 1, rank 1 has 2");
}

}  // namespace
}  // namespace cannl
