// Graph replay of GPU routines (config gpu_graphs) on the mock CUDA driver (mock_cuda_driver.c):
// the mock logs every kernel launch and memset in one form whether it came directly or from a
// graph, so each test compares what a graph launched with what direct launches of the same
// routine launch (graph_checks.h). What only a GPU shows (that the driver runs the graph's nodes
// as the stream would, and the time it saves) is left to the H200 check.
#include <gtest/gtest.h>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/graph_checks.h"
#include "backends/gpu/mock_libraries.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::test_gpu {
namespace {

using backends::gpu::GpuExecutable;
using Buffers = GraphRuns::Buffers;

class CudaGraphs : public ::testing::Test {
 protected:
  void SetUp() override { open(false); }
  void TearDown() override {
    config::clear_overrides();
    if (mock_ == nullptr) return;
    mock_->fail_graph_instantiate(0);
    mock_->fail_graph_updates(0);
    EXPECT_EQ(mock_->errors() - errors_before_, 0) << "calls a real driver would reject";
    runs_.reset();
    EXPECT_EQ(mock_->live_objects(), 0) << "allocations, graphs, modules, events, streams or contexts not released";
  }
  void open(bool without_graphs) {
    std::string why;
    mock_ = mock_cuda_driver(why, without_graphs);
    if (mock_ == nullptr) GTEST_SKIP() << why;
    errors_before_ = mock_->errors();
    runs_ = std::make_unique<GraphRuns>(backends::gpu::open_cuda_on(*mock_->api, 0), codegen::GpuLanguage::Cuda,
                                        MockLog{mock_->log, mock_->clear_log, mock_->declare_kernel});
  }
  GpuExecutable& compile() { return runs_->compile(); }
  Buffers buffers() { return runs_->buffers(); }
  std::string run(GpuExecutable& exe, const Buffers& b, std::int64_t batch) { return runs_->run(exe, b, batch); }
  std::string direct_run(const Buffers& b, std::int64_t batch) {
    const int launches = mock_->launches();
    std::string log = runs_->direct_run(b, batch);
    EXPECT_GT(mock_->launches(), launches);
    return log;
  }

  const MockDriver* mock_ = nullptr;
  int errors_before_ = 0;
  std::unique_ptr<GraphRuns> runs_;
};

TEST_F(CudaGraphs, ARoutineRunTwiceIsOneGraphBuiltOnceAndLaunchedTwice) {
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  const std::string expected = direct_run(b, 2);
  EXPECT_NE(expected.find("memset scratch0 4\n"), std::string::npos) << expected;
  EXPECT_NE(expected.find(" row "), std::string::npos) << expected;
  const int built = mock_->graph_instantiations(), graphs = mock_->graph_launches(), launches = mock_->launches();
  EXPECT_EQ(run(exe, b, 2), expected);
  EXPECT_EQ(run(exe, b, 2), expected);
  EXPECT_EQ(mock_->graph_instantiations(), built + 1);
  EXPECT_EQ(mock_->graph_launches(), graphs + 2);
  EXPECT_EQ(mock_->launches(), launches) << "no kernel launched directly";
  EXPECT_EQ(exe.graph_builds(), 1u);
}

// A run's launches (a memset and two kernels here, one by one) share one switch of the thread's
// context to the device's and one back, not two a call.
TEST_F(CudaGraphs, ARunSwitchesTheThreadsContextOnceAndBack) {
  config::set_override("gpu_graphs", "off");
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  mock_->api->cuCtxSetCurrent(nullptr);
  const int switches = mock_->context_switches(), launches = mock_->launches();
  const std::int64_t statics[] = {2};
  exe.run(b.pointers, statics);
  EXPECT_EQ(mock_->launches(), launches + 2);
  EXPECT_EQ(mock_->context_switches(), switches + 2) << "to the device's context and back to none";
  runs_->device()->synchronize();
}

TEST_F(CudaGraphs, AChangedStaticUpdatesOnlyTheKernelsThatReadIt) {
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  const std::string at1 = direct_run(b, 1), at3 = direct_run(b, 3);
  ASSERT_NE(at1, at3);
  EXPECT_EQ(run(exe, b, 1), at1);
  const int built = mock_->graph_instantiations(), updates = mock_->graph_updates();
  EXPECT_EQ(run(exe, b, 3), at3);
  EXPECT_EQ(run(exe, b, 3), at3);
  EXPECT_EQ(run(exe, b, 1), at1);
  EXPECT_EQ(mock_->graph_instantiations(), built) << "updated, not built again";
  EXPECT_EQ(mock_->graph_updates(), updates + 2) << "the gathering kernel, at each change; not the summing one";
  EXPECT_EQ(exe.graph_builds(), 1u);
}

TEST_F(CudaGraphs, OtherBuffersBuildTheGraphAgain) {
  GpuExecutable& exe = compile();
  const Buffers first = buffers(), second = buffers();
  const std::string expected = direct_run(second, 2);
  EXPECT_EQ(run(exe, first, 2), direct_run(first, 2));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(run(exe, second, 2), expected);
  EXPECT_EQ(run(exe, first, 2), direct_run(first, 2));
  EXPECT_EQ(run(exe, first, 2), direct_run(first, 2));
  EXPECT_EQ(exe.graph_builds(), 3u) << "for the first buffers, the second, the first again";
}

TEST_F(CudaGraphs, BuffersThatChangeAtEveryRunGiveGraphsUp) {
  GpuExecutable& exe = compile();
  const Buffers first = buffers(), second = buffers();
  const std::string on_first = direct_run(first, 2), on_second = direct_run(second, 2);
  ::testing::internal::CaptureStderr();
  for (int k = 0; k < 6; ++k) EXPECT_EQ(run(exe, k % 2 == 0 ? first : second, 2), k % 2 == 0 ? on_first : on_second);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(exe.graph_builds(), 3u) << "then one by one";
  EXPECT_NE(log.find("no cuda graph (its buffers changed at each of its last 4 runs)"), std::string::npos) << log;
}

TEST_F(CudaGraphs, AFailedUpdateBuildsTheGraphAgain) {
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  const std::string at3 = direct_run(b, 3);
  run(exe, b, 1);
  mock_->fail_graph_updates(1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(exe, b, 3), at3);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("updating its graph failed (cuGraphExecKernelNodeSetParams_v2 failed"), std::string::npos) << log;
  EXPECT_EQ(exe.graph_builds(), 2u);
}

TEST_F(CudaGraphs, AFailedInstantiationLaunchesOneByOneSayingWhy) {
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  const std::string expected = direct_run(b, 2);
  mock_->fail_graph_instantiate(1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(exe, b, 2), expected);
  EXPECT_EQ(run(exe, b, 2), expected);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("routine sum_and_gather: no cuda graph (cuGraphInstantiateWithFlags failed: CUDA_ERROR_MOCK"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("no cuda graph"), log.rfind("no cuda graph")) << "one line, not one per run: " << log;
  EXPECT_EQ(exe.graph_builds(), 0u);
}

TEST_F(CudaGraphs, GraphsOffOrProfiledLaunchOneByOne) {
  const Buffers b = buffers();
  const std::string expected = direct_run(b, 2);  // gpu_graphs=off
  config::set_override("profile_kernels", "true");
  GpuExecutable& profiled = compile();
  const int built = mock_->graph_instantiations();
  EXPECT_EQ(run(profiled, b, 2), expected);
  EXPECT_EQ(mock_->graph_instantiations(), built);
  EXPECT_EQ(profiled.graph_builds(), 0u);
  EXPECT_FALSE(profiled.kernel_timings().empty());
  config::set_override("profile_kernels", "false");
  config::set_override("gpu_graphs", "sometimes");
  EXPECT_THROW(compile(), ConfigError);
}

class CudaGraphsWithoutTheGraphApi : public CudaGraphs {
 protected:
  void SetUp() override { open(true); }
};

TEST_F(CudaGraphsWithoutTheGraphApi, LaunchOneByOneSayingWhy) {
  GpuExecutable& exe = compile();
  const Buffers b = buffers();
  const std::string expected = direct_run(b, 2);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(exe, b, 2), expected);
  EXPECT_EQ(run(exe, b, 2), expected);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("no cuda graph (the CUDA driver " + mock_->library->path() + " lacks cuGraphCreate, cuGraphDestroy,"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("no cuda graph"), log.rfind("no cuda graph")) << log;
  EXPECT_EQ(exe.graph_builds(), 0u);
}

}  // namespace
}  // namespace cannl::test_gpu
