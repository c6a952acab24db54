#pragma once
// Losses and metrics.
//
//   Tensor loss = nn::cross_entropy(logits, one_hot_targets);   // mean over the batch

#include <vector>

#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// Softmax cross-entropy from raw logits and one-hot (or probability) targets over the output
/// axes, averaged over all other axes: each row is sum_c t_c (lse - x_c), so a zero target row
/// (an out-of-range id of one_hot_of_ids: padding) is 0 with zero gradient, and the loss, its
/// gradient and the targets' gradient agree with the fused cross_entropy_loss. The row max is
/// detached (log-sum-exp stabilization).
///   Tensor loss = cross_entropy(logits, one_hot_of_ids(ids, 10));  // a row of id -1 counts 0
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

/// Fraction of rows whose arg-max over `num_classes` consecutive logits equals the label.
double accuracy(const std::vector<double>& logits, const std::vector<int>& labels, int num_classes);

}  // namespace cannl::nn
