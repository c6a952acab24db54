// The kernel census of whole training steps under the default GPU schedule, on a device shaped
// like an H200 (132 multiprocessors, sm_90's launch limits): no kernel may leave most of the device
// idle while its few threads run long serial loops (GPT-2's embedding gradients before the
// bucketed scatter, LeNet's convolution input gradient before the gather both did). The steps are
// scheduled, not run, so a regression of the GPU schedule's parallelism shows here without a GPU.
// And the census's summary itself.
#include "cannl/schedule/kernel_census.h"

#include <gtest/gtest.h>

#include "cannl/nn/functional.h"
#include "cannl/nn/gpt2.h"
#include "cannl/nn/losses.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/training.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"
#include "schedule/gpu_test_util.h"
#include "tensor/fresh_tensors.h"

namespace cannl::schedule {
namespace {

using testing::cuda_limits;
using testing::gpu_test_target;

constexpr std::int64_t kH200Multiprocessors = 132;

ir::Target h200_like_target() {
  ir::GpuLimits limits = cuda_limits();
  limits.compute_units = kH200Multiprocessors;
  return gpu_test_target(limits);
}

// The routine a training step compiles from, before any schedule.
ir::LoweredRoutine step_routine(const Tensor& loss) {
  std::optional<ir::LoweredRoutine> routine;
  train::StepOptions options{.sgd = {.lr = 0.01}};
  options.compile_step_routine = [&](runtime::Context& ctx, const ir::Comp& comp, const std::string& name) {
    routine = ctx.optimized_routine(comp, name);
    return ctx.compile(comp, name);
  };
  train::compile_step(runtime::Context::interpreter(), loss, options);
  return *routine;
}

std::vector<KernelCensusRow> census_on_h200(const ir::LoweredRoutine& routine) {
  const ir::Target target = h200_like_target();
  const ir::LoweredRoutine scheduled =
      default_gpu_schedule(routine, GpuScheduleOptions::from_config(target));
  return kernel_census(fission(lower_for_target(scheduled, target), target), target.gpu);
}

// The loss of a one-layer GPT-2 of `config` over batch x seq tokens (seq = config.n_positions)
// with ids spread over the vocabulary, its tokens as ids (the embedding's gradient a scatter) or
// one-hot rows (a matmul).
Tensor gpt2_loss(const nn::Gpt2Config& config, std::int64_t batch, bool one_hot_tokens) {
  const std::int64_t seq = config.n_positions, vocab = config.vocab_size;
  const nn::Gpt2Blocks model(config, "gpt");
  std::vector<std::int64_t> ids, next;
  for (std::int64_t i = 0; i < batch * seq; ++i) {
    ids.push_back((7919 * i + 11) % vocab);
    next.push_back((7919 * i + 48) % vocab);
  }
  const Tensor tokens = nn::ids_literal("ids", ids, {batch, seq});
  Tensor logits = model.logits(one_hot_tokens ? nn::one_hot_of_ids(tokens, vocab) : tokens, seq);
  return nn::cross_entropy_loss(logits, nn::one_hot_of_ids(nn::ids_literal("next", next, {batch, seq}), vocab));
}

// GPT-2 at the sizes of the benchmark workload gpt2_mini_train (one of its four layers: the
// layers are alike).
Tensor gpt2_mini_loss(bool one_hot_tokens) {
  return gpt2_loss({.vocab_size = 1024, .n_positions = 128, .n_embd = 256, .n_layer = 1, .n_head = 8,
                    .accumulate = ir::DType::F32},
                   8, one_hot_tokens);
}

// LeNet at the sizes of the benchmark workload lenet (a batch of 64 images of 32 x 32 x 1, two
// 5 x 5 convolutions of 6 and 16 channels with max pooling, three linear layers): its
// convolutions' input gradients are scatters over sliding windows.
Tensor lenet_loss() {
  using nn::Dims;
  const std::int64_t batch = 64, side = 32, classes = 10;
  std::vector<double> pixels(static_cast<std::size_t>(batch * side * side)), labels(static_cast<std::size_t>(batch * classes));
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<double>((k * 37) % 101) / 101.0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(batch); ++k) labels[k * classes + k % classes] = 1.0;
  Tensor h = literal("x", pixels, {.batch = Dims{batch}, .output = Dims{side, side, 1}});
  std::int64_t in_channels = 1;
  for (const std::int64_t channels : {6, 16}) {
    const std::string name = "conv" + std::to_string(channels);
    Tensor w = param(name + "_w", {.input = Dims{5, 5, in_channels}, .output = Dims{channels}});
    Tensor b = param(name + "_b", {.input = Dims{}, .output = Dims{channels}});
    h = max_pool2d(relu(conv2d(h, w) + b), 2);
    in_channels = channels;
  }
  for (const std::int64_t width : {120, 84, 10}) {
    nn::Linear layer("fc" + std::to_string(width), Dims{width});
    h = layer(h);
    if (width != classes) h = relu(h);
  }
  return nn::cross_entropy_loss(h, literal("labels", labels, {.batch = Dims{batch}, .output = Dims{classes}}));
}

class KernelCensus : public ::testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f32"};
};

// Tokens as ids, as the benchmark workload trains: the embedding gradients are scatters.
TEST_F(KernelCensus, Gpt2TrainingStepStarvesNoKernelOnAnH200) {
  const std::vector<KernelCensusRow> census = census_on_h200(step_routine(gpt2_mini_loss(false)));
  ASSERT_GT(census.size(), 50u);
  EXPECT_TRUE(starving_kernels(census).empty()) << kernel_census_summary(census, "gpt2 step", 10);
}

// GPT-2's own vocabulary of 50257 = 29 x 1733 entries (no divisor fills a block): the
// cross-entropy's row maximum and sum over it run as block reductions of whole blocks, the last
// slice guarded, not as one thread per token over 50257 steps. A small model over few tokens
// keeps the step cheap to build.
TEST_F(KernelCensus, Gpt2VocabularyOfAPrimeProductStarvesNoKernelOnAnH200) {
  const Tensor loss = gpt2_loss({.vocab_size = 50257, .n_positions = 64, .n_embd = 8, .n_layer = 1, .n_head = 2,
                                 .accumulate = ir::DType::F32},
                                1, false);
  const std::vector<KernelCensusRow> census = census_on_h200(step_routine(loss));
  EXPECT_TRUE(starving_kernels(census).empty()) << kernel_census_summary(census, "gpt2 step", 10);
}

TEST_F(KernelCensus, LenetTrainingStepStarvesNoKernelOnAnH200) {
  const std::vector<KernelCensusRow> census = census_on_h200(step_routine(lenet_loss()));
  ASSERT_GT(census.size(), 20u);
  EXPECT_TRUE(starving_kernels(census).empty()) << kernel_census_summary(census, "lenet step", 10);
}

// The census of a kernel that starves the device names it, with its share of the device.
TEST_F(KernelCensus, SummaryRanksTheHeaviestAndNamesTheStarving) {
  const ir::NodeRef c = ir::make_node("c", ir::DType::F32, {256, 256});
  const ir::Symbol b = ir::fresh_symbol(), t = ir::fresh_symbol(), k = ir::fresh_symbol(), s = ir::fresh_symbol();
  const ir::AxisIndex row = ir::AxisIndex::iterator(b), col = ir::AxisIndex::iterator(t);
  // k1: one block of 64 threads over 5000 steps; k0: 256 x 256 threads over 10 steps.
  const ir::StmtRef wide = ir::for_loop(
      b, 0, 256,
      ir::for_loop(t, 0, 256, ir::for_loop(k, 0, 10, ir::set(c, {row, col}, ir::constant(1, ir::DType::F32))),
                   ir::AxisType::Workgroup),
      ir::AxisType::Grid);
  const ir::StmtRef narrow = ir::for_loop(
      t, 0, 64, ir::for_loop(s, 0, 5000, ir::set(c, {ir::AxisIndex::fixed(0), col}, ir::constant(2, ir::DType::F32))),
      ir::AxisType::Workgroup);
  std::vector<Segment> segments(3);
  segments[0] = {.kind = Segment::Kind::Kernel, .body = wide, .geometry = ir::kernel_geometry(wide)};
  segments[1] = {.kind = Segment::Kind::Zero, .zeroed = c};
  segments[2] = {.kind = Segment::Kind::Kernel, .body = narrow, .geometry = ir::kernel_geometry(narrow)};
  const std::vector<KernelCensusRow> census = kernel_census(segments, h200_like_target().gpu);
  ASSERT_EQ(census.size(), 2u);
  EXPECT_EQ(census[1].kernel, 1u);
  ASSERT_EQ(starving_kernels(census).size(), 1u);
  const std::string summary = kernel_census_summary(census, "step", 1);
  EXPECT_NE(summary.find("step: 2 kernels, 5010 critical steps on 270336 resident threads; the heaviest:\n"
                         "  k1  1 x 64 threads (0.0237% of the device), 5000 steps per thread, 99.8% of the steps: c\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("kernels that starve the device"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("  k0 "), std::string::npos) << summary;
}

}  // namespace
}  // namespace cannl::schedule
