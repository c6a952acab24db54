#pragma once
// Optimizers as assignments over parameters and their gradients.
//
//   auto opt = nn::sgd(params, {.lr = 0.1, .momentum = 0.9});
//   // opt.update runs after backprop; opt.init zeroes the optimizer state.

#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

struct SgdOptions {
  double lr = 0.1;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

struct OptimizerCode {
  std::vector<ir::AsgnRef> update;  // one step, after the gradients are computed
  std::vector<ir::AsgnRef> init;    // zeroes the optimizer's state buffers
};

/// SGD (semantics-frontend.md 7): d = grad + wd * p; with momentum m = mu * m + d and
/// d = m (or d + mu * m with nesterov); p -= lr * d.
OptimizerCode sgd(const std::vector<Tensor>& params, const SgdOptions& options);

}  // namespace cannl::nn
