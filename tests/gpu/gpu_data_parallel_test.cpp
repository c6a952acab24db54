// Data-parallel training on two devices of the GPU backend in one context (two PoCL devices in
// CI, Context::cuda_devices({0, 1}) with CANNL_TEST_GPU_BACKEND=cuda on a machine with two GPUs):
// the same global batch learns what one device learns, and the replicas hold equal parameters.
// On PoCL the gradients are averaged on the host; on CUDA through NCCL when it loads. The
// device-side average data_parallel gives NCCL runs here too, over a collective that averages as
// ncclAvg does (each value times 1/R, summed in rank order) on the host.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/run_util.h"
#include "cannl/backends/multi_device.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"
#include "nn/moons_replicas.h"

namespace cannl {
namespace {

constexpr std::int64_t kGlobalBatch = 16, kGlobalSteps = 4;

using Model = test_models::MoonsModel;

Model moons_model(int replicas) {
  reset_tensor_state();
  return test_models::moons_model(replicas, {.global_batch = kGlobalBatch, .global_steps = kGlobalSteps, .seed = 5});
}

train::StepOptions options(const Model& m) { return test_models::sgd_options(m); }

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

/// ncclAvg's arithmetic on f32 buffers, members in rank order, staged through the host.
class HostAvg final : public backends::DeviceAllReduce {
 public:
  explicit HostAvg(int* calls) : calls_(calls) {}
  void average(const std::vector<std::vector<backends::Buffer*>>& buffers, backends::ReduceType type,
               std::string_view what) override {
    EXPECT_EQ(type, backends::ReduceType::F32) << what;
    ++*calls_;
    const float scale = 1.0f / static_cast<float>(buffers.size());
    for (std::size_t k = 0; k < buffers[0].size(); ++k) {
      std::vector<float> sum(buffers[0][k]->size() / sizeof(float), 0.0f), values(sum.size());
      for (const auto& device : buffers) {
        device[k]->read(std::as_writable_bytes(std::span(values)));
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[i] * scale;
      }
      for (const auto& device : buffers) device[k]->write(std::as_bytes(std::span(sum)));
    }
  }
  std::string describe() const override { return "ncclAvg on the host"; }

 private:
  int* calls_;
};

// Two replicas: ncclAvg's 0.5 * a + 0.5 * b rounds exactly as the host path's (a + b) * 0.5, so the
// device-side average trains bit for bit as the host's.
TEST(GpuDataParallel, TheDeviceSideAverageTrainsAsTheHostSum) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  std::string why;
  auto on_host = two_devices(why);
  if (!on_host) GTEST_SKIP() << why;
  test_util::ConfigGuard guard;
  config::set_override("gpu_all_reduce", "host");
  const Model host_model = moons_model(2);
  auto host_step = train::data_parallel(*on_host, host_model.loss, options(host_model));
  const auto host_losses = train::fit(host_step, {.epochs = 1});

  const Model device_model = moons_model(2);
  auto devices = two_devices(why);
  auto step = train::data_parallel(*devices, device_model.loss, options(device_model));
  int calls = 0;
  step.parallel->device_average =
      runtime::DeviceAverage::over({devices->device(0), devices->device(1)}, std::make_unique<HostAvg>(&calls));
  EXPECT_EQ(train::fit(step, {.epochs = 1}), host_losses);
  EXPECT_EQ(calls, kGlobalSteps);
  ASSERT_EQ(step.parallel->params.size(), host_step.parallel->params.size());
  for (std::size_t i = 0; i < step.parallel->params.size(); ++i)
    EXPECT_EQ(step.parallel->local[1].ctx.get_bytes(step.parallel->params[i]),
              host_step.parallel->local[1].ctx.get_bytes(host_step.parallel->params[i]))
        << step.parallel->params[i]->label;
}

}  // namespace
}  // namespace cannl
