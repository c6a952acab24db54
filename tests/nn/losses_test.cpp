// nn::cross_entropy (src/nn/losses.cpp) against an f64 host oracle and against the fused
// nn::cross_entropy_loss, on rows whose targets are zero (one_hot_of_ids' padding).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "block_test_util.h"
#include "cannl/cannl.h"

namespace cannl {
namespace {

using testing_util::LossAndGradient;

constexpr std::int64_t kRows = 3, kClasses = 3;
// Row 1's id is out of range: a zero target row. Logits laid out [class, row] (batch_input).
const std::vector<std::int64_t> kIds{2, 5, 0};
const std::vector<double> kLogits{0.3, -1.0, 2.0, 1.5, 0.25, -0.5, -0.7, 2.0, 0.1};

using LossFunction = Tensor (*)(const Tensor&, const Tensor&);
Tensor composed(const Tensor& logits, const Tensor& targets) { return nn::cross_entropy(logits, targets); }
Tensor fused(const Tensor& logits, const Tensor& targets) { return nn::cross_entropy_loss(logits, targets); }

LossAndGradient padded_rows_loss(LossFunction loss_of) {
  reset_tensor_state();
  std::vector<Tensor> params;
  Tensor logits = testing_util::batch_input(params, "logits", {kRows}, {kClasses});
  Tensor targets = nn::one_hot_of_ids(nn::ids_literal("ids", kIds), kClasses);
  return testing_util::loss_and_gradient(runtime::Context::cpu(), loss_of(logits, targets), params[0], kLogits);
}

double logit(std::int64_t row, std::int64_t c) { return kLogits[static_cast<std::size_t>(c * kRows + row)]; }

/// f64: mean over every row (padding included) of lse - x_id, 0 for a padded row; gradient
/// (softmax - one_hot) / rows, 0 on a padded row.
LossAndGradient exact_padded_rows() {
  LossAndGradient exact{0, std::vector<double>(kLogits.size(), 0.0)};
  for (std::int64_t r = 0; r < kRows; ++r) {
    const std::int64_t id = kIds[static_cast<std::size_t>(r)];
    if (id >= kClasses) continue;
    double sum = 0;
    for (std::int64_t c = 0; c < kClasses; ++c) sum += std::exp(logit(r, c));
    exact.loss += (std::log(sum) - logit(r, id)) / kRows;
    for (std::int64_t c = 0; c < kClasses; ++c)
      exact.gradient[static_cast<std::size_t>(c * kRows + r)] =
          (std::exp(logit(r, c)) / sum - (c == id ? 1.0 : 0.0)) / kRows;
  }
  return exact;
}

void expect_close_to(const LossAndGradient& got, const LossAndGradient& want, const std::string& what) {
  EXPECT_NEAR(got.loss, want.loss, 1e-6) << what << ": loss";
  ASSERT_EQ(got.gradient.size(), want.gradient.size()) << what;
  for (std::size_t i = 0; i < want.gradient.size(); ++i)
    EXPECT_NEAR(got.gradient[i], want.gradient[i], 1e-6) << what << ": gradient cell " << i;
}

TEST(CrossEntropy, AZeroTargetRowCostsNothingAndAgreesWithTheFusedLoss) {
  const LossAndGradient exact = exact_padded_rows();
  const LossAndGradient composed_loss = padded_rows_loss(composed);
  const LossAndGradient fused_loss = padded_rows_loss(fused);
  expect_close_to(composed_loss, exact, "cross_entropy");
  expect_close_to(fused_loss, exact, "cross_entropy_loss");
  expect_close_to(composed_loss, fused_loss, "cross_entropy against cross_entropy_loss");
  for (std::int64_t c = 0; c < kClasses; ++c)  // the padded row's gradient is exactly zero
    EXPECT_EQ(composed_loss.gradient[static_cast<std::size_t>(c * kRows + 1)], 0.0) << "class " << c;
}

}  // namespace
}  // namespace cannl
