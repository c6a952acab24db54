// nn::fused_attention: the online-softmax forward and the recomputing backward against the
// unfused composition (einsum, where, softmax, einsum) and against finite differences, on the
// interpreter and the C backend.
#include <gtest/gtest.h>

#include "attention_test_util.h"
#include "cannl/support/config.h"
#include "gradient_check.h"

namespace cannl {
namespace {

using testing_util::AttentionCase;
using testing_util::attention_run;
using testing_util::relative_error;

// The online softmax rescales its running sums as the maximum grows, and the backward
// recomputes the probabilities from the log-sum-exp: in f32, each output or gradient cell differs
// from the unfused one by a few roundings per key (about s * 2^-24 relative to the largest value,
// times the handful of operations per key), far below this bound for s <= 17.
constexpr double kF32Tolerance = 2e-5;

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
                    AttentionCase{.batch = 2, .seq = 17, .heads = 3, .d = 5, .e = 4, .causal = true},
                    AttentionCase{.batch = 2, .seq = 6, .heads = 2, .d = 3, .e = 2, .causal = false}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

class FusedAttentionGradient : public testing::Test {
 protected:
  void TearDown() override { config::clear_overrides(); }
};

TEST_F(FusedAttentionGradient, MatchesFiniteDifferencesInF64) {
  for (const bool causal : {true, false}) {
    reset_tensor_state();
    config::set_override("default_prec", "f64");
    const AttentionCase c{.batch = 2, .seq = 5, .heads = 2, .d = 3, .e = 2, .causal = causal};
    auto g = testing_util::attention_graph(c, true);
    testing_util::expect_gradients_match(runtime::Context::interpreter(), g.loss, g.inputs,
                                         "fused_attention", {.low = -2, .high = 2, .max_cells = 12});
  }
}

TEST(FusedAttentionBackends, TheCBackendComputesTheInterpretersValues) {
  const AttentionCase c{.batch = 2, .seq = 17, .heads = 3, .d = 5, .e = 4, .causal = true};
  const auto on_interpreter = attention_run(runtime::Context::interpreter(), c, true);
  const auto on_cc = attention_run(runtime::Context::cpu(), c, true);
  EXPECT_EQ(on_cc.out, on_interpreter.out);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(on_cc.grads[i], on_interpreter.grads[i]) << "qkv"[i];
}

}  // namespace
}  // namespace cannl
