#pragma once
// Gradient clipping by global norm (PyTorch clip_grad_norm_): the gradients of all parameters
// are scaled by min(1, max_norm / (norm + 1e-6)), norm = sqrt(sum of every squared gradient).
//
//   auto clip = nn::clip_grad_norm(params, 1.0);
//   comp.body.push_back(ir::make_block("clip", clip.code));   // after backprop, before the update

#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

struct ClipCode {
  std::vector<ir::AsgnRef> code;
  ir::NodeRef norm_sq;  // [1]: sum of squared gradients before clipping (readable after a step)
};

/// Throws RuntimeUsageError unless max_norm > 0 and params is non-empty.
///   ClipCode c = clip_grad_norm(params_of({loss}), 0.5);
ClipCode clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace cannl::nn
