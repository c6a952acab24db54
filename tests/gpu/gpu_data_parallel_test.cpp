// Data-parallel training on two devices of the GPU backend in one context (two PoCL devices in
// CI, Context::cuda_devices({0, 1}) with CANNL_TEST_GPU_BACKEND=cuda on a machine with two GPUs):
// the same global batch learns what one device learns, and the replicas hold equal parameters.
// On PoCL the gradients are averaged on the host; on CUDA through NCCL when it loads.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

constexpr std::int64_t kGlobalBatch = 16, kGlobalSteps = 4;

struct Model {
  ir::StaticSymbol batch;
  Tensor loss;
  std::int64_t n_batches = 0;
};

Model moons_model(int replicas) {
  reset_tensor_state();
  const std::int64_t micro = kGlobalBatch / replicas, n_batches = kGlobalSteps * replicas;
  const auto data = datasets::moons({.samples = kGlobalBatch * kGlobalSteps, .noise = 0.1, .seed = 5});
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  const nn::Dims dims{n_batches, micro};
  Tensor x = slice_batch(literal("x", data.features, {.batch = dims, .output = nn::Dims{2}}), batch);
  Tensor y = slice_batch(literal("y", data.one_hot(), {.batch = dims, .output = nn::Dims{2}}), batch);
  nn::Mlp mlp("mlp", {.hidden = {16}, .out = {2}, .output_bias = true});
  return {batch, nn::cross_entropy(mlp(x), y), n_batches};
}

train::StepOptions options(const Model& m) {
  return {.sgd = {.lr = 0.2, .momentum = 0.9}, .batch = m.batch, .n_batches = m.n_batches};
}

/// Two devices of the backend under test, or null with the reason.
std::optional<runtime::Context> two_devices(std::string& why) {
  try {
    const std::string name = gpu_test::backend_name();
    if (name == "cuda") return runtime::Context::cuda_devices({0, 1});
    if (name == "opencl") {
      // PoCL has one CPU device: two queues on it are two devices of the context.
      const auto platform = static_cast<int>(config::get_int("opencl_platform"));
      const auto device = static_cast<int>(config::get_int("opencl_device"));
      return runtime::Context::opencl_devices(platform, {device, device});
    }
    return runtime::Context::on_devices({backends::make_backend(name), backends::make_backend(name)});
  } catch (const BackendUnavailable& e) {
    why = std::string("two ") + gpu_test::backend_name() + " devices do not open here: " + e.what();
  }
  return std::nullopt;
}

TEST(GpuDataParallel, TwoDevicesLearnWhatOneDeviceLearns) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  std::string why;
  auto devices = two_devices(why);
  if (!devices) GTEST_SKIP() << why;
  const Model one = moons_model(1);
  auto single = train::compile_step(runtime::Context(gpu), one.loss, options(one));
  const auto reference = train::fit(single, {.epochs = 2});
  ASSERT_LT(reference.back(), reference.front());

  const Model two = moons_model(2);
  auto step = train::data_parallel(*devices, two.loss, options(two));
  ASSERT_EQ(step.parallel->replicas(), 2);
  const auto losses = train::fit(step, {.epochs = 2});
  ASSERT_EQ(losses.size(), reference.size());
  // A split batch sums its gradients in another order than one device: equal within rounding.
  for (std::size_t e = 0; e < losses.size(); ++e)
    EXPECT_NEAR(losses[e], reference[e], 1e-5 * std::abs(reference[e])) << "epoch " << e + 1;
  for (const auto& p : step.parallel->params)
    EXPECT_EQ(step.parallel->local[0].ctx.get_bytes(p), step.parallel->local[1].ctx.get_bytes(p)) << p->label;
}

}  // namespace
}  // namespace cannl
