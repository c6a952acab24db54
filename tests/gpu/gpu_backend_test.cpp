// The GPU backends as backends: choosing one by name or automatically, the names of what is
// missing, launch limits checked before the driver sees a kernel, local arrays in device memory,
// and the queue (runs return before the work is done; reads and synchronize wait).
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "gpu/gpu_test_util.h"
#include "runtime/packing_check.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using schedule::testing::it;

TEST(GpuBackendChoice, MissingCudaDriverIsNamed) {
  try {
    (void)backends::make_backend("cuda");
    GTEST_SKIP() << "a CUDA driver is present here";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
  }
}

TEST(GpuBackendChoice, MissingHipRuntimeIsNamed) {
  try {
    (void)backends::make_backend("hip");
    GTEST_SKIP() << "a HIP device is present here";
  } catch (const BackendUnavailable& e) {
    // Not installed, or installed (Debian's ROCm packages in CI) without an AMD GPU.
    EXPECT_NE(std::string(e.what()).find("libamdhip64.so"), std::string::npos) << e.what();
  }
}

TEST(GpuBackendChoice, UnknownNameIsAConfigError) {
  EXPECT_THROW((void)backends::make_backend("vulkan"), ConfigError);
}

TEST(GpuBackendChoice, AutoTakesTheFirstThatOpensAndSaysWhyOthersWereSkipped) {
  std::vector<std::string> skipped;
  const auto backend = backends::make_backend("auto", &skipped);
  ASSERT_NE(backend, nullptr);
  const std::vector<std::string> order = {"cuda", "hip", "opencl", "cc"};
  const auto chosen = std::find(order.begin(), order.end(), std::string(backend->name()));
  ASSERT_NE(chosen, order.end());
  // Every backend before the chosen one was skipped, with its reason.
  ASSERT_EQ(skipped.size(), static_cast<std::size_t>(chosen - order.begin()));
  for (std::size_t k = 0; k < skipped.size(); ++k) EXPECT_EQ(skipped[k].rfind(order[k] + ": ", 0), 0u) << skipped[k];
}

TEST(GpuBackend, ConfigKeyBackendOpensIt) {
  if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
  test_util::ConfigGuard guard;
  config::set_override("backend", gpu_test::backend_name());
  EXPECT_EQ(runtime::Context::from_config().backend_name(), gpu_test::backend_name());
}

TEST(GpuBackend, AWorkgroupOverTheDeviceLimitIsAScheduleErrorBeforeLaunch) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const std::int64_t limit = gpu->target().gpu.max_threads_per_block;
  ASSERT_GT(limit, 0);
  const ir::NodeRef a = ir::make_node("a", ir::DType::F32, {limit + 1});
  const ir::Symbol i = ir::fresh_symbol();
  const ir::LoweredRoutine r{"too_wide", ir::for_loop(i, 0, limit + 1, ir::set(a, {it(i)}, ir::constant(1, ir::DType::F32)),
                                                      ir::AxisType::Workgroup), {}};
  try {
    (void)gpu->compile({r, {a}});
    FAIL() << "compiled a block of " << limit + 1 << " threads";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(limit)), std::string::npos) << e.what();
  }
}

TEST(GpuBackend, AHoistedStagePacksOnceOnTheDevice) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  testing::expect_packed_once_and_after_changes(runtime::Context(gpu));
}

TEST(GpuBackend, LocalArraysLiveInDeviceMemoryZeroedEveryRun) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  // tmp (not a parameter) accumulates a[i] over i; out = tmp. Run twice: tmp restarts at zero.
  const ir::NodeRef a = ir::make_node("a", ir::DType::F32, {8});
  const ir::NodeRef tmp = ir::make_node("tmp", ir::DType::F32, {1});
  const ir::NodeRef out = ir::make_node("out", ir::DType::F32, {1});
  const ir::Symbol i = ir::fresh_symbol();
  const auto fixed0 = std::vector<ir::AxisIndex>{ir::AxisIndex::fixed(0)};
  const auto acc = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(tmp, fixed0), ir::get(a, {it(i)})});
  const ir::LoweredRoutine r{"local_sum", ir::seq({ir::for_loop(i, 0, 8, ir::set(tmp, fixed0, acc)),
                                                   ir::set(out, fixed0, ir::get(tmp, fixed0))}), {}};
  auto exe = gpu->compile({r, {a, out}});
  auto buf_a = gpu->allocate(32), buf_out = gpu->allocate(4);
  buf_a->write(test_util::bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<backends::Buffer*> buffers = {buf_a.get(), buf_out.get()};
  for (int run = 0; run < 2; ++run) {
    exe->run(buffers, {});
    gpu->synchronize();
    test_util::Bytes bytes(4);
    buf_out->read(bytes);
    EXPECT_EQ(test_util::values_of<float>(bytes)[0], 36.0f) << "run " << run;
  }
}

}  // namespace
}  // namespace cannl
