#pragma once
// Losses and metrics.
//
//   Tensor loss = nn::cross_entropy(logits, one_hot_targets);   // mean over the batch

#include <vector>

#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// Softmax cross-entropy from raw logits and one-hot (or probability) targets over the output
/// axes, averaged over all other axes. The row max is detached (log-sum-exp stabilization).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

/// Fraction of rows whose arg-max over `num_classes` consecutive logits equals the label.
double accuracy(const std::vector<double>& logits, const std::vector<int>& labels, int num_classes);

}  // namespace cannl::nn
