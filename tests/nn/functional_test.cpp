// The fused cross-entropy loss (nn::cross_entropy_loss, src/nn/functional.cpp) at large logits:
// a constant added to every logit must not change the loss or its gradient beyond a few ulps of
// their own size, against an f64 host oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "block_test_util.h"
#include "cannl/cannl.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;
using testing_util::batch_input;
using testing_util::LossAndGradient;

/// A few f32 ulps of a value of size `magnitude`.
double f32_ulps(double count, double magnitude) { return count * 0x1p-24 * std::abs(magnitude); }

/// Two rows of logits [b + 0.5, b], the first targeting class 0, the second class 1: the report's
/// case, whose exact mean loss is (log(1 + e^-0.5) + log(1 + e^0.5)) / 2 = 0.7240770.
LossAndGradient fused_loss_of_shifted_rows(double b) {
  reset_tensor_state();
  std::vector<Tensor> params;
  Tensor logits = batch_input(params, "logits", {2}, {2});
  Tensor loss = nn::cross_entropy_loss(logits, nn::one_hot_of_ids(nn::ids_literal("ids", {0, 1}), 2));
  // batch_input's layout: [class, row].
  return testing_util::loss_and_gradient(runtime::Context::cpu(), loss, params[0], {b + 0.5, b + 0.5, b, b});
}

/// The f64 oracle of fused_loss_of_shifted_rows: the rows do not depend on b.
LossAndGradient exact_shifted_rows() {
  const double p0 = 1 / (1 + std::exp(-0.5)), p1 = 1 - p0;
  const double loss = (std::log1p(std::exp(-0.5)) + std::log1p(std::exp(0.5))) / 2;
  // d loss / d logit = (softmax - target) / rows, laid out [class, row].
  return {loss, {(p0 - 1) / 2, p0 / 2, p1 / 2, (p1 - 1) / 2}};
}

void expect_close_to(const LossAndGradient& got, const LossAndGradient& want, const std::string& what) {
  EXPECT_NEAR(got.loss, want.loss, f32_ulps(4, want.loss)) << what << ": loss";
  ASSERT_EQ(got.gradient.size(), want.gradient.size()) << what;
  for (std::size_t i = 0; i < want.gradient.size(); ++i)
    EXPECT_NEAR(got.gradient[i], want.gradient[i], f32_ulps(4, 0.5)) << what << ": gradient cell " << i;
}

TEST(FusedCrossEntropy, LargeLogitsLoseNothingToTheRowMax) {
  const LossAndGradient exact = exact_shifted_rows();
  const LossAndGradient unshifted = fused_loss_of_shifted_rows(0);
  expect_close_to(unshifted, exact, "b = 0");
  for (const double b : {1000.0, 30000.0}) {
    const LossAndGradient shifted = fused_loss_of_shifted_rows(b);
    expect_close_to(shifted, exact, "b = " + std::to_string(b));
    expect_close_to(shifted, unshifted, "b = " + std::to_string(b) + " against b = 0");
  }
}

}  // namespace
}  // namespace cannl
