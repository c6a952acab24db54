// Mixed-precision training: the gradients of an MLP and of a transformer decoder block under the
// bf16 and f16 policies against the f32 run, dynamic loss scaling, the interpreter against the C
// backend on a policy program, and a model that learns as well under bf16 as under f32.
//
// Tolerances (docs/ARCHITECTURE.md, "Mixed precision"). Rounding a factor to a format with p
// significant bits changes it by a relative |d| <= u = 2^-p (bf16 u = 2^-8, f16 u = 2^-11); a
// product of two rounded factors by at most 2u + u^2, and the exact products are summed in f32,
// whose own error (K 2^-24 relative to sum |a b|) is negligible beside it. So one contraction's
// result moves by at most 2u sum_k |a_k b_k|, i.e. 2u c relative, where c = sum |a b| / |sum a b|
// is the dot product's condition. A gradient passes through n rounded contractions (the forward
// ones before it, the backward ones after), and first-order errors add: the normwise relative
// error of a gradient is bounded by about 2u n c. The rounding errors of a sum's terms have
// random signs and mostly cancel (a sum of K of them grows like sqrt(K), as the sum of K terms of
// random signs does), which absorbs the conditions c of these models' sums: the tests assert
// 2u n, with n the longest path of the model, and the observed errors sit 5 to 20 times below it
// (bf16: 1 to 3 u; f16: 1 to 4 u). They also assert an error above u / 8, which a model without
// the roundings (error 0, or the f32 noise of another summation order, about 2^-20) cannot reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "cannl/cannl.h"
#include "cannl/support/float_codecs.h"
#include "block_test_util.h"

namespace cannl {
namespace {

using testing_util::Dims;
using testing_util::lcg_values;

class MixedPrecision : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

const double kBf16Unit = 0x1p-8, kF16Unit = 0x1p-11;

/// A model's loss and its parameters, built under the current policy.
using ModelBuilder = std::function<Tensor()>;

struct Gradients {
  double loss = 0;
  std::vector<std::vector<double>> grads;  // per parameter, in params_of order
  std::vector<std::string> names;
};

/// One forward and backward pass of the model built under `policy`, on `ctx`.
Gradients gradients_of(const ModelBuilder& build, MatmulPrecision policy, runtime::Context ctx) {
  reset_tensor_state();
  Tensor loss;
  {
    PrecisionScope scope(PrecisionPolicy{policy});
    loss = build();
  }
  const auto params = params_of({loss});
  train::upload_literals(ctx, {loss});
  auto init = ctx.compile(init_params_code(params), "init");
  auto grad = ctx.compile(grad_update_code(loss), "gradients");
  ctx.run(init);
  ctx.run(grad);
  Gradients g;
  g.loss = ctx.get_values(loss.value()).at(0);
  for (const auto& p : params) {
    g.grads.push_back(ctx.get_values(p.grad()));
    g.names.push_back(p.label());
  }
  return g;
}

double relative_distance(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

double norm(const std::vector<double>& v) {
  double n = 0;
  for (double x : v) n += x * x;
  return std::sqrt(n);
}

/// The largest normwise relative distance over the parameters' gradients. Each is checked
/// against the bound 2 u n and the floor u / 8 (the roundings happened), except: a gradient that
/// no rounded contraction reaches (`exact`: a bias after the last product) must be bitwise the
/// f32 one, and a gradient that is zero up to f32 noise (the key bias of attention: softmax
/// ignores a shift of a row) must stay within the bound relative to the largest gradient (the
/// roundings break the cancellation, by about u).
double check_against_f32(const ModelBuilder& build, MatmulPrecision policy, double unit, int path,
                         const std::vector<std::string>& exact = {}) {
  const Gradients f32 = gradients_of(build, MatmulPrecision::F32, runtime::Context::cpu());
  const Gradients mixed = gradients_of(build, policy, runtime::Context::cpu());
  const double bound = 2 * unit * path;
  double largest = 0;
  for (const auto& g : f32.grads) largest = std::max(largest, norm(g));
  EXPECT_NEAR(mixed.loss, f32.loss, bound * std::abs(f32.loss));
  double worst = 0;
  for (std::size_t k = 0; k < f32.grads.size(); ++k) {
    const std::string& name = f32.names[k];
    if (std::find(exact.begin(), exact.end(), name) != exact.end()) {
      EXPECT_EQ(mixed.grads[k], f32.grads[k]) << name;
      continue;
    }
    if (norm(f32.grads[k]) < 1e-6 * largest) {
      EXPECT_LT(norm(mixed.grads[k]), bound * largest) << name;
      continue;
    }
    const double d = relative_distance(mixed.grads[k], f32.grads[k]);
    EXPECT_LT(d, bound) << name;
    EXPECT_GT(d, unit / 8) << name << ": no rounding reached this gradient";
    worst = std::max(worst, d);
  }
  return worst;
}

/// MLP 8 -> 32 -> 32 -> 4 (relu) on 16 rows, cross-entropy against fixed targets. Longest path:
/// 3 forward contractions, 2 backward ones to the first layer's input gradient, 1 for w1's.
constexpr int kMlpPath = 6;
Tensor mlp_loss() {
  Tensor x = literal("x", lcg_values(16 * 8, -1, 1, 11), {.batch = Dims{16}, .input = Dims{}, .output = Dims{8}});
  std::vector<double> targets(16 * 4, 0.0);
  for (int r = 0; r < 16; ++r) targets[static_cast<std::size_t>(r * 4 + (r * 7) % 4)] = 1;
  Tensor y = literal("y", targets, {.batch = Dims{16}, .input = Dims{}, .output = Dims{4}});
  nn::Mlp mlp("mlp", {.hidden = {32, 32}, .out = {4}, .output_bias = true});
  return nn::cross_entropy(mlp(x), y);
}

/// A pre-LN decoder block (2 heads, d_model 16, d_ff 32) over 2 sequences of 8, loss = the mean
/// of its output times fixed weights. Longest path: q/k projections, scores, attention x v,
/// output projection, fc, proj forward (6), as many backward, plus the weight gradient: 13.
constexpr int kBlockPath = 13;
Tensor decoder_block_loss() {
  Tensor x = literal("x", lcg_values(2 * 8 * 16, -1, 1, 12), {.batch = Dims{2, 8}, .input = Dims{}, .output = Dims{16}});
  Tensor w = literal("w", lcg_values(2 * 8 * 16, -1, 1, 13), {.batch = Dims{2, 8}, .input = Dims{}, .output = Dims{16}});
  nn::DecoderBlock block("h0", {.heads = 2, .d_model = 16, .d_ff = 32});
  return mean(pointmul(block(x, nn::causal_mask(8)), w));
}

/// Two padded 3x3 convolutions (2 -> 4 -> 4 channels) on 2 images of 6x6, relu between, loss the
/// mean of the output times fixed weights: the rounded copies of padded inputs and the rounded
/// gradient of a padded node. Longest path: 2 forward, 1 backward, the first kernel's gradient: 4.
constexpr int kConvPath = 4;
Tensor conv_loss() {
  Tensor x = literal("x", lcg_values(2 * 6 * 6 * 2, -1, 1, 14), {.batch = Dims{2}, .input = Dims{}, .output = Dims{6, 6, 2}});
  Tensor w = literal("w", lcg_values(2 * 6 * 6 * 4, -1, 1, 15), {.batch = Dims{2}, .input = Dims{}, .output = Dims{6, 6, 4}});
  nn::Conv2d c1("c1", {.in_channels = 2, .out_channels = 4, .padding = true});
  nn::Conv2d c2("c2", {.in_channels = 4, .out_channels = 4, .padding = true});
  return mean(pointmul(c2(relu(c1(x))), w));
}

TEST_F(MixedPrecision, ConvolutionGradientsWithinTheBoundOfF32) {
  // The last bias gets the loss's gradient through no product.
  const double bf16 = check_against_f32(conv_loss, MatmulPrecision::BF16, kBf16Unit, kConvPath, {"c2_b"});
  const double f16 = check_against_f32(conv_loss, MatmulPrecision::F16, kF16Unit, kConvPath, {"c2_b"});
  EXPECT_LT(f16, bf16 / 2);
}

TEST_F(MixedPrecision, MlpGradientsWithinTheBoundOfF32) {
  const double bf16 = check_against_f32(mlp_loss, MatmulPrecision::BF16, kBf16Unit, kMlpPath);
  const double f16 = check_against_f32(mlp_loss, MatmulPrecision::F16, kF16Unit, kMlpPath);
  // f16 keeps 3 more bits than bf16: its error is several times smaller.
  EXPECT_LT(f16, bf16 / 2);
}

TEST_F(MixedPrecision, DecoderBlockGradientsWithinTheBoundOfF32) {
  // The output projection's bias gets the loss's gradient through no product.
  const double bf16 = check_against_f32(decoder_block_loss, MatmulPrecision::BF16, kBf16Unit, kBlockPath, {"h0_proj_b"});
  const double f16 = check_against_f32(decoder_block_loss, MatmulPrecision::F16, kF16Unit, kBlockPath, {"h0_proj_b"});
  EXPECT_LT(f16, bf16 / 2);
}

TEST_F(MixedPrecision, InterpreterAndCBackendAgreeOnAPolicyProgram) {
  // Bitwise: no re-association licence, and the roundings are ops both compute alike.
  config::set_override("cpu_schedule_reassociate", "false");
  const Gradients cc = gradients_of(mlp_loss, MatmulPrecision::BF16, runtime::Context::cpu());
  const Gradients interp = gradients_of(mlp_loss, MatmulPrecision::BF16, runtime::Context::interpreter());
  EXPECT_EQ(cc.loss, interp.loss);
  for (std::size_t k = 0; k < cc.grads.size(); ++k) EXPECT_EQ(cc.grads[k], interp.grads[k]) << cc.names[k];
}

struct TrainingRun {
  std::vector<double> losses;
  double accuracy = 0;
  std::int64_t skipped_steps = 0;
};

/// The moons MLP of `cannl demo` (2 -> 64 -> 2, relu, SGD with momentum) on 512 points, trained
/// under `policy` (f16 with dynamic loss scaling), evaluated in f32 on every point.
TrainingRun train_moons(MatmulPrecision policy, int epochs) {
  reset_tensor_state();
  auto data = datasets::moons({.samples = 512, .seed = 42});
  ir::StaticSymbol batch{ir::fresh_symbol(), 16, "batch"};
  Tensor x = literal("x", data.features, {.batch = Dims{16, 32}, .output = Dims{2}});
  Tensor y = literal("y", data.one_hot(), {.batch = Dims{16, 32}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{64}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  auto model = [&](const Tensor& in) { return w2 * relu(w1 * in + b1) + b2; };
  Tensor loss;
  {
    PrecisionScope scope(PrecisionPolicy{policy});
    loss = nn::cross_entropy(model(slice_batch(x, batch)), slice_batch(y, batch));
  }
  std::optional<nn::LossScaleOptions> scaling;
  if (policy == MatmulPrecision::F16) scaling = nn::LossScaleOptions{.growth_interval = 64};
  auto step = train::compile_step(runtime::Context::cpu(), loss,
                                  {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = batch, .n_batches = 16,
                                   .loss_scale = scaling});
  TrainingRun r;
  r.losses = train::fit(step, {.epochs = epochs});
  Tensor all = literal("x_all", data.features, {.batch = Dims{512}, .output = Dims{2}});
  Tensor logits = model(all);
  auto eval = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(eval);
  r.accuracy = nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2);
  if (step.loss_scaler) r.skipped_steps = step.loss_scaler->state().skipped_steps;
  return r;
}

TEST_F(MixedPrecision, MoonsTrainUnderBf16AndF16AsUnderF32) {
  constexpr int kEpochs = 20;
  const TrainingRun f32 = train_moons(MatmulPrecision::F32, kEpochs);
  ASSERT_GE(f32.accuracy, 0.95);
  for (MatmulPrecision p : {MatmulPrecision::BF16, MatmulPrecision::F16}) {
    const TrainingRun mixed = train_moons(p, kEpochs);
    const std::string name(PrecisionPolicy{p}.name());
    // Two points of 512 either way: the runs diverge step by step but reach the same model.
    EXPECT_NEAR(mixed.accuracy, f32.accuracy, 2.0 / 512 + 1e-12) << name;
    EXPECT_NEAR(mixed.losses.back(), f32.losses.back(), 0.05 * f32.losses.back()) << name;
    EXPECT_NE(mixed.losses, f32.losses) << name << ": the policy changed nothing";
    EXPECT_EQ(mixed.skipped_steps, 0) << name;
  }
}

}  // namespace
}  // namespace cannl
