#pragma once
// Adam and AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019, PyTorch's formulation) as
// assignments over parameters, gradients and persistent state, beside SGD (optimizers.h).
//
//   auto opt = nn::adam(params, {.schedule = {.lr = 3e-4}, .weight_decay = 0.1, .decoupled = true});
//   comp.body.push_back(ir::make_block("adamw", opt.update));   // after backprop

#include <vector>

#include "cannl/nn/optimizers.h"
#include "cannl/nn/schedules.h"

namespace cannl::nn {

struct AdamOptions {
  LrSchedule schedule;        // learning rate per step (constant 1e-3 by default)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  /// AdamW: p *= 1 - lr * weight_decay before the Adam step; otherwise L2 (g += wd * p).
  bool decoupled = false;
  /// Weight decay only for parameters with at least this many axes (their value's dims). 2 is
  /// the GPT-2 recipe of nanoGPT and llm.c: weight matrices and embeddings decay, biases and
  /// layer-norm gains and shifts do not (PyTorch: two parameter groups, split on p.dim() >= 2).
  int weight_decay_min_rank = 0;
};

/// The state of an Adam optimizer, readable through the context after a step.
struct AdamCode {
  OptimizerCode code;          // update: step += 1, then per parameter m, v and p
  ir::NodeRef step;            // [1]: number of updates done (bias correction, schedules)
  std::vector<ir::NodeRef> m;  // first moments, one per parameter
  std::vector<ir::NodeRef> v;  // second moments
};

/// With t = step after the increment and lr_t = schedule(t):
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
///   p -= lr_t / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
/// Throws RuntimeUsageError for betas outside [0, 1), eps < 0, weight_decay < 0,
/// weight_decay_min_rank < 0.
///   AdamCode opt = adam(params_of({loss}), {.schedule = {.lr = 0.01}});
AdamCode adam(const std::vector<Tensor>& params, const AdamOptions& options);

}  // namespace cannl::nn
