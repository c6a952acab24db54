// nn::fused_attention: the online-softmax forward and the recomputing backward against the
// unfused composition (einsum, where, softmax, einsum) and against finite differences, on the
// interpreter and the C backend.
#include <gtest/gtest.h>

#include "attention_test_util.h"
#include "cannl/nn/gpt2.h"
#include "cannl/support/config.h"
#include "gradient_check.h"
#include "small_models.h"

namespace cannl {
namespace {

using testing_util::AttentionCase;
using testing_util::Dims;
using testing_util::attention_run;
using testing_util::relative_error;

// The online softmax rescales its running sums as the maximum grows, and the backward
// recomputes the probabilities from the log-sum-exp: in f32, each output or gradient cell differs
// from the unfused one by a few roundings (2^-24 relative each) of its largest terms, not by
// errors that grow with s: the cases below stay within 2.8e-7 of the largest value; the bound
// leaves a factor of 7.
constexpr double kF32Tolerance = 2e-6;

class FusedAttention : public testing::TestWithParam<AttentionCase> {
 protected:
  void TearDown() override { config::clear_overrides(); }
};

TEST_P(FusedAttention, MatchesTheUnfusedAttentionOnTheInterpreter) {
  const AttentionCase& c = GetParam();
  const auto fused = attention_run(runtime::Context::interpreter(), c, true);
  const auto unfused = attention_run(runtime::Context::interpreter(), c, false);
  EXPECT_LT(relative_error(fused.out, unfused.out), kF32Tolerance) << describe(c) << ": out";
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_LT(relative_error(fused.grads[i], unfused.grads[i]), kF32Tolerance)
        << describe(c) << ": gradient of " << "qkv"[i];
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttention,
    testing::Values(AttentionCase{.batch = 1, .seq = 1, .heads = 1, .d = 5, .e = 5, .causal = true},
                    AttentionCase{.batch = 2, .seq = 17, .heads = 1, .d = 5, .e = 3, .causal = true},
                    AttentionCase{.batch = 2, .seq = 6, .heads = 2, .d = 8, .e = 4, .causal = false}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

class FusedAttentionGradient : public testing::Test {
 protected:
  void TearDown() override { config::clear_overrides(); }
};

TEST_F(FusedAttentionGradient, MatchesFiniteDifferencesInF64) {
  for (const bool causal : {true, false}) {
    reset_tensor_state();
    config::set_override("default_prec", "f64");
    // Small, since every checked cell runs the interpreted step twice.
    const AttentionCase c{.batch = 2, .seq = causal ? 4 : 3, .heads = 2, .d = 3, .e = 2, .causal = causal};
    auto g = testing_util::attention_graph(c, true);
    testing_util::expect_gradients_match(runtime::Context::interpreter(), g.loss, g.inputs,
                                         "fused_attention", {.low = -2, .high = 2, .max_cells = 6});
  }
}

TEST(FusedAttentionBackends, TheCBackendComputesTheInterpretersValues) {
  const AttentionCase c{.batch = 2, .seq = 9, .heads = 2, .d = 8, .e = 3, .causal = true};
  const auto on_interpreter = attention_run(runtime::Context::interpreter(), c, true);
  const auto on_cc = attention_run(runtime::Context::cpu(), c, true);
  EXPECT_EQ(on_cc.out, on_interpreter.out);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(on_cc.grads[i], on_interpreter.grads[i]) << "qkv"[i];
}

TEST_F(FusedAttentionGradient, AutoFusesOnlyLargeCausalAttention) {
  using nn::AttentionKernel;
  EXPECT_EQ(nn::causal_mask_length(nn::causal_mask(7)), 7);
  EXPECT_EQ(nn::causal_mask_length(literal("ones", std::vector<double>(4, 1.0), {.batch = Dims{2}, .input = Dims{2}})),
            std::nullopt);
  EXPECT_FALSE(nn::fused_attention_pays(AttentionKernel::Auto, 1024, 12, true));  // 96 MiB of scores
  EXPECT_TRUE(nn::fused_attention_pays(AttentionKernel::Auto, 2048, 12, true));   // 384 MiB
  EXPECT_FALSE(nn::fused_attention_pays(AttentionKernel::Fused, std::nullopt, 12, true));  // another mask
  EXPECT_TRUE(nn::fused_attention_pays(AttentionKernel::Fused, std::nullopt, 12, false));  // no mask
  EXPECT_FALSE(nn::fused_attention_pays(AttentionKernel::Auto, std::nullopt, 12, false));
  config::set_override("attention", "fused");
  EXPECT_TRUE(nn::fused_attention_pays(AttentionKernel::Auto, 8, 1, true));
  EXPECT_FALSE(nn::fused_attention_pays(AttentionKernel::Unfused, 8, 1, true));
  config::set_override("attention", "sometimes");
  EXPECT_THROW(nn::fused_attention_pays(AttentionKernel::Auto, 8, 1, true), ConfigError);
}

TEST(FusedAttentionShapes, CausalNeedsAsManyKeysAsQueries) {
  reset_tensor_state();
  std::vector<Tensor> inputs;
  Tensor q = testing_util::batch_input(inputs, "q", {1, 4}, {1, 2});
  Tensor k = testing_util::batch_input(inputs, "k", {1, 5}, {1, 2});
  Tensor v = testing_util::batch_input(inputs, "v", {1, 5}, {1, 2});
  EXPECT_NO_THROW(forward_code({nn::fused_attention(q, k, v, {.causal = false})}));
  EXPECT_THROW(forward_code({nn::fused_attention(q, k, v, {.causal = true})}), ShapeError);
}

/// SGD losses of a one-layer GPT-2 over 2 sequences of 12 tokens, attention chosen by the config key.
std::vector<double> gpt2_losses(const std::string& attention) {
  config::set_override("attention", attention);
  auto step = train::compile_step(runtime::Context::cpu(), testing_util::tiny_gpt2_loss(), {.sgd = {.lr = 0.5}});
  return train::fit(step, {.epochs = 4});
}

TEST_F(FusedAttentionGradient, Gpt2TrainsToTheUnfusedLosses) {
  const auto fused = gpt2_losses("fused");
  const auto unfused = gpt2_losses("unfused");
  ASSERT_EQ(fused.size(), unfused.size());
  for (std::size_t i = 0; i < fused.size(); ++i)
    EXPECT_NEAR(fused[i], unfused[i], 1e-6 * unfused[i]) << "step " << i + 1;  // seen: 9e-8
  EXPECT_LT(fused.back(), fused.front());
}

}  // namespace
}  // namespace cannl
