// Whole training steps under the default GPU schedule, the final lowering round and fission, run
// kernel by kernel on the interpreter with the race checker (cannl/interp/race_check.h): a
// one-layer GPT-2 (fused and unfused attention) trained by AdamW with a clipped gradient, and the
// moons MLP by SGD. The literals (token ids, targets) hold their values, every other f32 node
// test values (fill_test_memory): the embedding's scatters add each token's update into the
// row its id names, several tokens into one row. A
// race between blocks, or between threads of a block with no barrier between them, fails here
// whatever the values, even where PoCL's order of blocks and threads would hide it. Without
// re-association the results are the unscheduled step's bits; with it (the default), within
// rounding, and the kernels that run as block reductions are left to the GPU tests.
#include <gtest/gtest.h>

#include "cannl/cannl.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/lower_for_target.h"
#include "cannl/support/config.h"
#include "nn/small_models.h"
#include "schedule/gpu_test_util.h"

namespace cannl::schedule::testing {
namespace {

// The optimized step routine train::compile_step would compile for `loss` (nothing is compiled).
ir::LoweredRoutine step_routine(const Tensor& loss, train::StepOptions options) {
  std::optional<ir::LoweredRoutine> step;
  options.compile_step_routine = [&](runtime::Context& ctx, const ir::Comp& comp, const std::string& name) {
    step = ctx.optimized_routine(comp, name);
    return ctx.compile(ir::Comp{.body = {}, .statics = comp.statics}, name + "_unused");
  };
  train::compile_step(runtime::Context::interpreter(), loss, options);
  internal_check(step.has_value(), "gpu_model_race_test: compile_step compiled no step routine");
  return *step;
}

ir::LoweredRoutine gpt2_step(const std::string& attention) {
  config::set_override("attention", attention);
  return step_routine(testing_util::tiny_gpt2_loss(), {.optimizer = train::Optimizer::AdamW,
                                                       .adam = {.schedule = {.lr = 1e-3}, .weight_decay = 0.1},
                                                       .clip_grad_norm = 1.0});
}

ir::LoweredRoutine moons_step() {
  const testing_util::MoonsMlp mlp = testing_util::moons_mlp(64, 64);
  return step_routine(mlp.loss, {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = mlp.batch, .n_batches = mlp.n_batches});
}

// `step` scheduled for the GPU test target, its kernels run one by one on the interpreter, each
// race-checked (run_segments), against the unscheduled step.
void expect_race_free(const ir::LoweredRoutine& step, Tolerance tolerance) {
  const ir::Target target = gpu_test_target();
  const ir::LoweredRoutine scheduled = lower_for_target(default_gpu_schedule(step, GpuScheduleOptions::from_config(target)), target);
  const std::vector<Segment> segments = fission(scheduled, target);
  const std::vector<std::int64_t> statics(step.statics.size(), 1);
  int checked = 0;
  for (const Segment& s : segments)
    checked += s.kind == Segment::Kind::Kernel && !s.geometry.serial() && interp::race_checkable(s.body) ? 1 : 0;
  EXPECT_GT(checked, 10) << "too few kernels race-checked";
  EXPECT_EQ(compare(run_interp(step, statics), run_segments(scheduled, segments, Order::Interpreter, statics), tolerance),
            "");
  std::printf("%s: %zu segments, %d race-checked kernels\n", step.name.c_str(), segments.size(), checked);
}

// The models are tiny: every nest of 4 cells or more goes parallel, as a large model's would.
class GpuModelRaces : public ::testing::Test {
 protected:
  void SetUp() override { config::set_override("gpu_schedule_min_parallel", "4"); }
  void TearDown() override { config::clear_overrides(); }
};

// Blocks of 32 threads as well: more blocks per nest, rows split between them under guards.
TEST_F(GpuModelRaces, Gpt2TrainingStepsRunWithoutARace) {
  for (const char* block_size : {"256", "32"})
    for (const char* attention : {"fused", "unfused"}) {
      SCOPED_TRACE(std::string(attention) + " attention, blocks of " + block_size);
      config::set_override("gpu_schedule_block_size", block_size);
      config::set_override("gpu_schedule_reassociate", "false");
      expect_race_free(gpt2_step(attention), Tolerance::Bitwise);
      config::set_override("gpu_schedule_reassociate", "true");
      expect_race_free(gpt2_step(attention), Tolerance::Reassociated);
    }
}

TEST_F(GpuModelRaces, MlpTrainingStepRunsWithoutARace) {
  config::set_override("gpu_schedule_reassociate", "false");
  expect_race_free(moons_step(), Tolerance::Bitwise);
}

}  // namespace
}  // namespace cannl::schedule::testing
