// Training on the gpu-emulator backend (tests/backends/gpu_emulator_test.cpp): the moons MLP under
// the default GPU schedule and fission, every kernel race-checked on the interpreter, reaches the
// interpreter's losses bit for bit when no sum is re-associated. No GPU needed.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "cannl/cannl.h"
#include "cannl/support/config.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

struct MoonsRun {
  std::vector<double> losses;
  std::string step_source;  // the launches, as the emulator lists them
};

MoonsRun moons_run(runtime::Context ctx) {
  reset_tensor_state();
  const auto data = datasets::moons({.samples = 64, .noise = 0.1, .seed = 42});
  ir::StaticSymbol batch{ir::fresh_symbol(), 2, "batch"};
  Tensor x_all = literal("moons_x", data.features, {.batch = Dims{2, 32}, .output = Dims{2}});
  Tensor y_all = literal("moons_y", data.one_hot(), {.batch = Dims{2, 32}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{16}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  Tensor logits = w2 * relu(w1 * slice_batch(x_all, batch) + b1) + b2;
  auto step = train::compile_step(ctx, nn::cross_entropy(logits, slice_batch(y_all, batch)),
                                  {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = batch, .n_batches = 2});
  return {train::fit(step, {.epochs = 2}), step.step.source()};
}

// Without re-association the GPU schedule keeps every sum's order: the interpreter's losses.
TEST(GpuEmulator, TrainsAnMlpToTheInterpretersLosses) {
  test_util::ConfigGuard guard;
  config::set_override("gpu_schedule_reassociate", "false");
  config::set_override("gpu_schedule_min_parallel", "4");  // a tiny model: parallel anyway
  const MoonsRun emulated = moons_run(runtime::Context(backends::make_gpu_emulator_backend()));
  const MoonsRun interpreted = moons_run(runtime::Context::interpreter());
  ASSERT_EQ(emulated.losses.size(), 2u);
  EXPECT_EQ(emulated.losses, interpreted.losses);
  EXPECT_LT(emulated.losses.back(), emulated.losses.front());
  EXPECT_NE(emulated.step_source.find(") grid:"), std::string::npos) << emulated.step_source;
  EXPECT_NE(emulated.step_source.find(") workgroup:"), std::string::npos) << emulated.step_source;
}

}  // namespace
}  // namespace cannl
