// Adam / AdamW, gradient clipping and learning-rate schedules against host references.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"
#include "cannl/nn/adam.h"
#include "cannl/nn/grad_clip.h"
#include "cannl/nn/schedules.h"
#include "tensor/fresh_tensors.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class Optimizers : public testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f64"};
};

/// Host reference of one Adam(W) step at 1-based step t (PyTorch's formulation).
void adam_reference(std::vector<double>& p, std::vector<double>& m, std::vector<double>& v,
                    std::vector<double> g, const nn::AdamOptions& o, int t) {
  const double lr = nn::schedule_value(o.schedule, t);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (o.decoupled) p[i] *= 1 - lr * o.weight_decay;
    else g[i] += o.weight_decay * p[i];
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
    const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.eps;
    p[i] -= lr / (1 - std::pow(o.beta1, t)) * m[i] / denom;
  }
}

/// loss = sum(w^3) / 3 + sum(w): gradient w^2 + 1, checkable on the host.
/// `reference`: the options the host reference steps with (default: `options`).
void check_adam(const nn::AdamOptions& options, std::optional<double> clip = std::nullopt,
                std::optional<nn::AdamOptions> reference = std::nullopt) {
  reset_tensor_state();
  Tensor w = param("w", {.input = Dims{}, .output = Dims{5}});
  Tensor loss = sum(pointmul(constant(1.0 / 3), pointmul(w, pointmul(w, w)))) + sum(w);
  ir::Comp comp = grad_update_code(loss);
  std::optional<nn::ClipCode> clip_code;
  if (clip) {
    clip_code = nn::clip_grad_norm({w}, *clip);
    comp.body.push_back(ir::make_block("clip", clip_code->code));
  }
  auto opt = nn::adam({w}, options);
  comp.body.push_back(ir::make_block("adam", opt.code.update));
  auto ctx = runtime::Context::interpreter();
  ir::Comp init;
  init.body = opt.code.init;
  auto init_routine = ctx.compile(init, "adam_init");
  auto step = ctx.compile(comp, "adam_step");
  std::vector<double> p = {0.5, -1.0, 2.0, 0.1, -0.3}, m(5, 0.0), v(5, 0.0);
  ctx.set_values(w.value(), p);
  ctx.run(init_routine);
  for (int t = 1; t <= 6; ++t) {
    std::vector<double> g;
    for (double x : p) g.push_back(x * x + 1);
    if (clip) {
      double norm = 0;
      for (double x : g) norm += x * x;
      const double scale = std::min(1.0, *clip / (std::sqrt(norm) + 1e-6));
      for (double& x : g) x *= scale;
    }
    adam_reference(p, m, v, g, reference.value_or(options), t);
    ctx.run(step);
    const auto got = ctx.get_values(w.value());
    for (std::size_t i = 0; i < p.size(); ++i)
      EXPECT_NEAR(got[i], p[i], 1e-5) << "step " << t << " cell " << i;
  }
  EXPECT_EQ(ctx.get_values(opt.step).at(0), 6.0);
}

TEST_F(Optimizers, AdamMatchesHostReference) { check_adam({.schedule = {.lr = 0.05}}); }
TEST_F(Optimizers, AdamL2MatchesHostReference) {
  check_adam({.schedule = {.lr = 0.05}, .weight_decay = 0.1});
}
TEST_F(Optimizers, AdamWMatchesHostReference) {
  check_adam({.schedule = {.lr = 0.05}, .weight_decay = 0.1, .decoupled = true});
}
TEST_F(Optimizers, AdamWDecaysOnlyParametersOfTheMinimumRank) {
  // w has one axis: under a minimum rank of 2 (GPT-2's groups) it steps as without decay, under 1
  // it decays.
  const nn::AdamOptions no_decay{.schedule = {.lr = 0.05}, .decoupled = true};
  check_adam({.schedule = {.lr = 0.05}, .weight_decay = 0.5, .decoupled = true, .weight_decay_min_rank = 2},
             std::nullopt, no_decay);
  check_adam({.schedule = {.lr = 0.05}, .weight_decay = 0.5, .decoupled = true, .weight_decay_min_rank = 1});
}
TEST_F(Optimizers, AdamWithWarmupCosineScheduleMatchesHostReference) {
  check_adam({.schedule = {.kind = nn::ScheduleKind::WarmupCosine, .lr = 0.1, .warmup_steps = 2,
                           .total_steps = 5, .min_lr = 0.01}});
}
TEST_F(Optimizers, ClippedAdamMatchesHostReference) {
  check_adam({.schedule = {.lr = 0.05}}, 0.5);
}

TEST_F(Optimizers, ScheduleValues) {
  using nn::ScheduleKind;
  EXPECT_DOUBLE_EQ(nn::schedule_value({.lr = 0.1}, 7), 0.1);
  nn::LrSchedule warm{.kind = ScheduleKind::LinearWarmup, .lr = 1.0, .warmup_steps = 4};
  EXPECT_DOUBLE_EQ(nn::schedule_value(warm, 1), 0.25);
  EXPECT_DOUBLE_EQ(nn::schedule_value(warm, 9), 1.0);
  nn::LrSchedule cosine{.kind = ScheduleKind::Cosine, .lr = 1.0, .total_steps = 10, .min_lr = 0.1};
  EXPECT_NEAR(nn::schedule_value(cosine, 5), 0.55, 1e-12);
  EXPECT_NEAR(nn::schedule_value(cosine, 10), 0.1, 1e-12);
  EXPECT_NEAR(nn::schedule_value(cosine, 20), 0.1, 1e-12);
}

TEST_F(Optimizers, RejectsBadSettings) {
  Tensor w = param("w", {.input = Dims{}, .output = Dims{2}});
  try {
    nn::adam({w}, {.beta1 = 1.0});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("beta1 and beta2 must lie in [0, 1)"), std::string::npos);
  }
  try {
    nn::adam({w}, {.weight_decay_min_rank = -1});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("weight_decay_min_rank must be >= 0"), std::string::npos);
  }
  try {
    nn::schedule_value({.kind = nn::ScheduleKind::Cosine, .total_steps = 0}, 1);
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cosine needs total_steps"), std::string::npos);
  }
  try {
    nn::clip_grad_norm({w}, 0.0);
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("max_norm must be finite and > 0"), std::string::npos);
  }
}

}  // namespace
}  // namespace cannl
