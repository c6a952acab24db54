#pragma once
// The data-parallel tests' model: a moons MLP whose loss covers one replica's micro-batch of
// global_batch / replicas rows, over global_steps x replicas static batches (so every replica
// count sees the same global batches in the same order).
//   MoonsModel m = moons_model(2, {.global_batch = 16, .global_steps = 8, .seed = 3});
//   auto step = train::data_parallel(devices, m.loss, sgd_options(m));

#include "cannl/cannl.h"
#include "cannl/nn/functional.h"

namespace cannl::test_models {

struct MoonsShape {
  std::int64_t global_batch = 16;
  std::int64_t global_steps = 8;
  std::uint64_t seed = 3;
  double input_dropout = 0;  // > 0: dropout on the input features (stream "input_drop")
};

struct MoonsModel {
  ir::StaticSymbol batch;
  Tensor loss;
  std::int64_t n_batches = 0;
};

inline MoonsModel moons_model(int replicas, const MoonsShape& shape) {
  const std::int64_t micro = shape.global_batch / replicas;
  const std::int64_t n_batches = shape.global_steps * replicas;
  const auto data = datasets::moons({.samples = shape.global_batch * shape.global_steps, .noise = 0.1, .seed = shape.seed});
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  const nn::Dims dims{n_batches, micro};
  Tensor x = slice_batch(literal("x", data.features, {.batch = dims, .output = nn::Dims{2}}), batch);
  Tensor y = slice_batch(literal("y", data.one_hot(), {.batch = dims, .output = nn::Dims{2}}), batch);
  if (shape.input_dropout > 0) x = nn::dropout(x, batch, {.rate = shape.input_dropout, .stream = "input_drop"});
  nn::Mlp mlp("mlp", {.hidden = {16}, .out = {2}, .output_bias = true});
  return {batch, nn::cross_entropy(mlp(x), y), n_batches};
}

/// SGD with momentum over the model's static batches.
inline train::StepOptions sgd_options(const MoonsModel& m) {
  return {.sgd = {.lr = 0.2, .momentum = 0.9}, .batch = m.batch, .n_batches = m.n_batches};
}

}  // namespace cannl::test_models
