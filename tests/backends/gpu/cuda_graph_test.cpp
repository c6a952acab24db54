// Graph replay of GPU routines (config gpu_graphs) on the mock CUDA driver (mock_cuda_driver.c):
// the mock logs every kernel launch and memset in one form whether it came directly or from a
// graph, so each test compares what a graph launched with what direct launches of the same
// routine launch. A routine here has a scratch array (a memset node), a kernel that reads a
// static value and one that does not. What only a GPU shows (that the driver runs the graph's
// nodes as the stream would, and the time it saves) is left to the H200 check.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "backends/gpu/cuda_device.h"
#include "backends/gpu/device_checks.h"
#include "backends/gpu/gpu_backend.h"
#include "backends/gpu/gpu_executable.h"
#include "backends/gpu/mock_libraries.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::test_gpu {
namespace {

using backends::Buffer;
using backends::gpu::GpuExecutable;

// tmp[0] = sum_i a[i]; out[0] = tmp[0]; row[j] = data[batch, j]: tmp is a Local array (device
// scratch, zeroed each run), the sum a serial kernel, and only the row copy (a parallel kernel)
// reads the static `batch`.
backends::CompileRequest summing_and_gathering() {
  auto a = ir::make_node("a", ir::DType::F32, {8});
  auto out = ir::make_node("out", ir::DType::F32, {1});
  auto data = ir::make_node("data", ir::DType::F32, {4, 256});
  auto row = ir::make_node("row", ir::DType::F32, {256});
  auto tmp = ir::make_node("tmp", ir::DType::F32, {1});
  const ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at0{ir::AxisIndex::fixed(0)};
  const auto sum = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(tmp, at0), ir::get(a, {ir::AxisIndex::iterator(i)})});
  const ir::AxisIndex batch_row{{{1, batch.symbol}}, 0};
  const auto body = ir::seq({ir::for_loop(i, 0, 8, ir::set(tmp, at0, sum)), ir::set(out, at0, ir::get(tmp, at0)),
                             ir::for_loop(j, 0, 256, ir::set(row, {ir::AxisIndex::iterator(j)},
                                                           ir::get(data, {batch_row, ir::AxisIndex::iterator(j)})))});
  return {ir::LoweredRoutine{"sum_and_gather", body, {batch}}, {a, out, data, row}};
}

// The buffers of one run of summing_and_gathering.
struct Buffers {
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> pointers;
};

class CudaGraphs : public ::testing::Test {
 protected:
  void SetUp() override { open(false); }
  void TearDown() override {
    config::clear_overrides();
    if (mock_ == nullptr) return;
    mock_->fail_graph_instantiate(0);
    mock_->fail_graph_updates(0);
    EXPECT_EQ(mock_->errors() - errors_before_, 0) << "calls a real driver would reject";
    executables_.clear();
    backend_.reset();
    device_.reset();
    EXPECT_EQ(mock_->live_objects(), 0) << "allocations, graphs, modules, events, streams or contexts not released";
  }
  void open(bool without_graphs) {
    std::string why;
    mock_ = mock_cuda_driver(why, without_graphs);
    if (mock_ == nullptr) GTEST_SKIP() << why;
    errors_before_ = mock_->errors();
    device_ = backends::gpu::open_cuda_on(*mock_->api, 0);
    backend_ = backends::make_gpu_backend(device_, codegen::GpuLanguage::Cuda);
  }

  // The routine compiled under the current configuration, its kernels declared to the mock.
  GpuExecutable& compile() {
    backends::CompileRequest request = summing_and_gathering();
    request.routine = backend_->default_schedule(request.routine);
    executables_.push_back(backend_->compile(request));
    auto& exe = dynamic_cast<GpuExecutable&>(*executables_.back());
    // The mock reads no parameter layout from the cubin: each kernel's argument count from its
    // signature (every argument is 8 bytes: a pointer or an int64_t).
    static const std::regex signature(R"(__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\(([^)]*)\))");
    int kernels = 0;
    for (std::sregex_iterator m(exe.source().begin(), exe.source().end(), signature), end; m != end; ++m, ++kernels) {
      const std::string params = (*m)[2];
      mock_->declare_kernel((*m)[1].str().c_str(), params.empty() ? 0 : 1 + static_cast<int>(std::count(params.begin(), params.end(), ',')));
    }
    EXPECT_GE(kernels, 2) << exe.source();
    return exe;
  }
  Buffers buffers() {
    Buffers b;
    for (std::size_t bytes : {8 * 4, 4, 4 * 256 * 4, 256 * 4}) {
      b.owned.push_back(backend_->allocate(bytes));
      b.pointers.push_back(b.owned.back().get());
    }
    return b;
  }
  // What one run launched, as the mock logged it, with the addresses of `b` by name and any other
  // (the executable's scratch) by order of appearance.
  std::string run(GpuExecutable& exe, const Buffers& b, std::int64_t batch) {
    mock_->clear_log();
    const std::int64_t statics[] = {batch};
    exe.run(b.pointers, statics);
    device_->synchronize();
    std::map<std::string, std::string> names;
    const char* kNames[] = {"a", "out", "data", "row"};
    for (std::size_t k = 0; k < b.pointers.size(); ++k) {
      std::ostringstream hex;
      hex << std::hex << backends::gpu::cuda_pointer(*device_, *b.pointers[k]);
      names[hex.str()] = kNames[k];
    }
    std::istringstream in(mock_->log());
    std::ostringstream out;
    std::string word;
    while (in >> word) {
      // Heap addresses are long; static values and sizes are short.
      if (word.size() >= 8 && word.find_first_not_of("0123456789abcdef") == std::string::npos && !names.contains(word))
        names[word] = "scratch" + std::to_string(names.size() - b.pointers.size());
      out << (names.contains(word) ? names[word] : word) << (in.peek() == '\n' ? "\n" : " ");
    }
    return out.str();
  }
  // The same run of a copy of the routine compiled with gpu_graphs=off.
  std::string direct_run(const Buffers& b, std::int64_t batch) {
    config::set_override("gpu_graphs", "off");
    GpuExecutable& direct = compile();
    config::clear_overrides();
    const int launches = mock_->launches();
    std::string log = run(direct, b, batch);
    EXPECT_GT(mock_->launches(), launches);
    EXPECT_EQ(direct.graph_builds(), 0u);
    return log;
  }

  const MockDriver* mock_ = nullptr;
  int errors_before_ = 0;
  std::shared_ptr<backends::gpu::Device> device_;
  std::shared_ptr<backends::Backend> backend_;
  std::vector<std::unique_ptr<backends::Executable>> executables_;
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
  EXPECT_EQ(run(exe, second, 2), expected);
  EXPECT_EQ(run(exe, second, 2), expected);
  EXPECT_EQ(exe.graph_builds(), 2u);
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
