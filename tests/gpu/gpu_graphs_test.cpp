// Graph replay (config gpu_graphs) computes what launching one kernel at a time computes: on
// CUDA and HIP the routine runs as a device graph, updated as its static value changes and built
// again for other buffers; OpenCL has no graphs, so on PoCL this checks that the static values a
// kernel does not read (passed as 0) were indeed not read.
#include <gtest/gtest.h>

#include <numeric>

#include "backends/gpu/gpu_executable.h"
#include "backends/gpu/graph_checks.h"
#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

// tmp[0] = sum_i a[i]; out[0] = tmp[0]; row[j] = data[batch, j] (tmp is the executable's scratch):
// the routine of the mock-driver graph tests.
using test_gpu::summing_and_gathering;

// The routine's buffers, its inputs filled from `seed`.
struct Buffers {
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> pointers;
  Buffers(backends::Backend& gpu, float seed) {
    std::vector<float> a(8), data(4 * 256);
    std::iota(a.begin(), a.end(), seed);
    std::iota(data.begin(), data.end(), seed * 1000);
    for (std::size_t bytes : {8 * 4, 4, 4 * 256 * 4, 256 * 4}) {
      owned.push_back(gpu.allocate(bytes));
      pointers.push_back(owned.back().get());
    }
    owned[0]->write(test_util::bytes_of(a));
    owned[2]->write(test_util::bytes_of(data));
  }
  // out, then row.
  std::vector<float> outputs() const {
    std::vector<float> values;
    for (int k : {1, 3}) {
      test_util::Bytes bytes(owned[k]->size());
      owned[k]->read(bytes);
      const auto v = test_util::values_of<float>(bytes);
      values.insert(values.end(), v.begin(), v.end());
    }
    return values;
  }
};

TEST(GpuGraphs, ComputeWhatLaunchingOneByOneComputes) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  backends::CompileRequest request = summing_and_gathering();
  request.routine = gpu->default_schedule(request.routine);
  auto replayed = gpu->compile(request);
  config::set_override("gpu_graphs", "off");
  auto direct = gpu->compile(request);
  config::clear_overrides();
  Buffers graph_a(*gpu, 1), graph_b(*gpu, 2), direct_a(*gpu, 1), direct_b(*gpu, 2);
  // Same buffers, a static that changes, other buffers, the first ones again.
  const std::vector<std::pair<char, std::int64_t>> runs = {{'a', 1}, {'a', 1}, {'a', 3}, {'b', 2}, {'a', 0}};
  for (const auto& [which, batch] : runs) {
    const std::int64_t statics[] = {batch};
    Buffers& g = which == 'a' ? graph_a : graph_b;
    Buffers& d = which == 'a' ? direct_a : direct_b;
    replayed->run(g.pointers, statics);
    direct->run(d.pointers, statics);
    const std::vector<float> got = g.outputs(), expected = d.outputs();
    EXPECT_EQ(got, expected) << which << " at " << batch;
    const float seed = which == 'a' ? 1 : 2;
    EXPECT_EQ(expected[0], 8 * seed + 28) << which << " at " << batch;
    EXPECT_EQ(expected[1 + 5], seed * 1000 + static_cast<float>(batch * 256 + 5)) << which << " at " << batch;
  }
  if (!gpu_test::prints_kernels()) return;  // the gpu-emulator's launches are interpreter runs: no graphs
  const auto& exe = dynamic_cast<const backends::gpu::GpuExecutable&>(*replayed);
  const bool has_graphs = gpu->name() == "cuda" || gpu->name() == "hip";
  EXPECT_EQ(exe.graph_builds(), has_graphs ? 3u : 0u) << "built for a, for b, for a again";
}

// A training loop on the same buffers, its batch index a static value that changes every step,
// builds its graphs in the first steps and none after (CUDA and HIP: OpenCL has no graphs).
TEST(GpuGraphs, ASteadyTrainingLoopBuildsItsGraphsOnce) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  if (gpu->name() != "cuda" && gpu->name() != "hip") GTEST_SKIP() << "the " << gpu->name() << " backend has no graphs";
  reset_tensor_state();
  using Dims = std::vector<std::int64_t>;
  const auto data = datasets::moons({.samples = 64, .noise = 0.1, .seed = 7});
  ir::StaticSymbol batch{ir::fresh_symbol(), 4, "batch"};
  Tensor x_all = literal("moons_x", data.features, {.batch = Dims{4, 16}, .output = Dims{2}});
  Tensor y_all = literal("moons_y", data.one_hot(), {.batch = Dims{4, 16}, .output = Dims{2}});
  Tensor w = param("w", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor loss = nn::cross_entropy(w * slice_batch(x_all, batch), slice_batch(y_all, batch));
  auto step = train::compile_step(runtime::Context(gpu), loss,
                                  {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = batch, .n_batches = 4});
  const std::vector<double> first = train::fit(step, {.epochs = 1});
  const std::size_t built = backends::gpu::graphs_built();
  const std::vector<double> later = train::fit(step, {.epochs = 2});
  EXPECT_EQ(backends::gpu::graphs_built(), built) << "built again in a steady loop";
  EXPECT_LT(later.back(), first.front());
  EXPECT_GT(built, 0u);
}

}  // namespace
}  // namespace cannl
