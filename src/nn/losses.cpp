#include "cannl/nn/losses.h"

#include <algorithm>

#include "cannl/support/error.h"

namespace cannl::nn {
namespace {
/// Reduces the output axes, keeping batch and input axes.
constexpr const char* kOverClasses = "...|...->... => ...|...->";
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  Tensor row_max = stop_gradient(max(logits, kOverClasses));
  Tensor shifted = logits - row_max;
  Tensor log_sum_exp = log(sum(exp(shifted), kOverClasses));
  Tensor target_logit = sum(pointmul(targets, shifted), kOverClasses);
  // A row's loss is sum_c t_c (lse - x_c): lse weighs by the row's target mass, so a zero row
  // (one_hot_of_ids' padding) costs 0 and gets no gradient, as in cross_entropy_loss.
  Tensor target_mass = sum(targets, kOverClasses);
  return mean(pointmul(target_mass, log_sum_exp) - target_logit);
}

double accuracy(const std::vector<double>& logits, const std::vector<int>& labels,
                int num_classes) {
  if (num_classes <= 0 || logits.size() != labels.size() * static_cast<std::size_t>(num_classes))
    throw RuntimeUsageError("accuracy: " + std::to_string(logits.size()) + " logits for " +
                            std::to_string(labels.size()) + " labels and " +
                            std::to_string(num_classes) + " classes");
  std::size_t correct = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto row = logits.begin() + static_cast<std::ptrdiff_t>(i * num_classes);
    const auto best = std::max_element(row, row + num_classes) - row;
    if (best == labels[i]) ++correct;
  }
  return labels.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace cannl::nn
