// Training steps with Adam and AdamW chosen through train::StepOptions against trajectories of
// torch.optim.Adam / AdamW (fixtures adam_steps, adamw_steps from scripts/make_parity_fixtures.py,
// computed in f64): a linear least-squares model, full batch, five steps, cannl in f32 on the C
// backend. Checked: the loss before every step and the parameters after it.
#include <gtest/gtest.h>

#include "cannl/cannl.h"
#include "parity_util.h"

namespace cannl {
namespace {

using namespace testing_util;
using Dims = std::vector<std::int64_t>;

constexpr double kTolerance = 1e-5;

/// Row `k` of a fixture tensor whose leading axis counts steps.
std::vector<double> step_row(const FixtureTensor& t, std::size_t k) {
  const std::size_t n = t.values.size() / static_cast<std::size_t>(t.dims.at(0));
  return {t.values.begin() + static_cast<std::ptrdiff_t>(k * n),
          t.values.begin() + static_cast<std::ptrdiff_t>((k + 1) * n)};
}

void check_trajectory(const std::string& name, train::Optimizer optimizer) {
  reset_tensor_state();
  config::set_override("default_prec", "f32");
  const Fixture f = load_fixture(name);
  const auto& h = f.at("hyper").values;  // lr, beta1, beta2, eps, weight_decay
  const std::int64_t rows = f.at("x").dims[0];
  Tensor x = literal("x", f.at("x").values, {.batch = Dims{rows}, .output = Dims{f.at("x").dims[1]}});
  Tensor y = literal("y", f.at("y").values, {.batch = Dims{rows}, .output = Dims{f.at("y").dims[1]}});
  nn::Linear fc("fc", {f.at("y").dims[1]});
  Tensor diff = fc(x) - y;
  Tensor loss = (1.0 / static_cast<double>(rows)) * sum(pointmul(diff, diff));
  ir::StaticSymbol unused{ir::fresh_symbol(), 1, "unused"};
  auto step = train::compile_step(
      runtime::Context::cpu(), loss,
      {.optimizer = optimizer,
       .adam = {.schedule = {.lr = h[0]}, .beta1 = h[1], .beta2 = h[2], .eps = h[3], .weight_decay = h[4]},
       .batch = unused});
  step.ctx.set_values(fc.w.value(), f.at("w").values);
  step.ctx.set_values(fc.b->value(), f.at("b").values);
  const std::size_t steps = static_cast<std::size_t>(f.at("losses").dims[0]);
  for (std::size_t k = 0; k < steps; ++k) {
    step.ctx.run(step.step);
    const double loss_error = max_relative_error(step.ctx.get_values(loss.value()), step_row(f.at("losses"), k));
    const double w_error = max_relative_error(step.ctx.get_values(fc.w.value()), step_row(f.at("w_steps"), k));
    const double b_error = max_relative_error(step.ctx.get_values(fc.b->value()), step_row(f.at("b_steps"), k));
    EXPECT_LT(loss_error, kTolerance) << name << ": loss of step " << k + 1;
    EXPECT_LT(w_error, kTolerance) << name << ": w after step " << k + 1;
    EXPECT_LT(b_error, kTolerance) << name << ": b after step " << k + 1;
    std::printf("  %-12s step %zu  loss %.3g  w %.3g  b %.3g (max rel err)\n", name.c_str(), k + 1,
                loss_error, w_error, b_error);
  }
  ASSERT_TRUE(step.adam.has_value());
  EXPECT_EQ(step.ctx.get_values(step.adam->step).at(0), static_cast<double>(steps));
  config::clear_overrides();
}

TEST(OptimizerParity, AdamStepsMatchTorchOptimAdam) {
  check_trajectory("adam_steps", train::Optimizer::Adam);
}
TEST(OptimizerParity, AdamWStepsMatchTorchOptimAdamW) {
  check_trajectory("adamw_steps", train::Optimizer::AdamW);
}

}  // namespace
}  // namespace cannl
