// Training on the gpu-emulator backend (tests/backends/gpu_emulator_test.cpp): the moons MLP under
// the default GPU schedule and fission, every kernel race-checked on the interpreter, reaches the
// interpreter's losses bit for bit when no sum is re-associated. No GPU needed.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "nn/small_models.h"

namespace cannl {
namespace {

struct MoonsRun {
  std::vector<double> losses;
  std::string step_source;  // the launches, as the emulator lists them
};

MoonsRun moons_run(runtime::Context ctx) {
  const testing_util::MoonsMlp mlp = testing_util::moons_mlp(64, 16);
  auto step = train::compile_step(ctx, mlp.loss, {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = mlp.batch,
                                                  .n_batches = mlp.n_batches});
  return {train::fit(step, {.epochs = 2}), step.step.source()};
}

// Without re-association the GPU schedule keeps every sum's order: the interpreter's losses.
TEST(GpuEmulator, TrainsAnMlpToTheInterpretersLosses) {
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_reassociate", "false");
  config::set_override("gpu_schedule_min_parallel", "4");  // a tiny model: parallel anyway
  const MoonsRun emulated = moons_run(runtime::Context::gpu_emulator());
  const MoonsRun interpreted = moons_run(runtime::Context::interpreter());
  ASSERT_EQ(emulated.losses.size(), 2u);
  EXPECT_EQ(emulated.losses, interpreted.losses);
  EXPECT_LT(emulated.losses.back(), emulated.losses.front());
  EXPECT_NE(emulated.step_source.find(") grid:"), std::string::npos) << emulated.step_source;
  EXPECT_NE(emulated.step_source.find(") workgroup:"), std::string::npos) << emulated.step_source;
}

}  // namespace
}  // namespace cannl
