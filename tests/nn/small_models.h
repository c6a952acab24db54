#pragma once
// Small models the tests train or schedule whole (from a reset tensor state):
//
//   Tensor loss = testing_util::tiny_gpt2_loss();           // 1 layer, 2 heads, 8 wide, vocab 16
//   const testing_util::MoonsMlp mlp = testing_util::moons_mlp(64, 16);
//   train::compile_step(ctx, mlp.loss, {.sgd = {.lr = 0.1}, .batch = mlp.batch, .n_batches = mlp.n_batches});
#include <cstdint>
#include <vector>

#include "cannl/cannl.h"
#include "cannl/nn/gpt2.h"

namespace cannl::testing_util {

/// The cross-entropy of a one-layer GPT-2 (vocab 16, window 12, 8 wide, 2 heads, f32 sums) over
/// 2 sequences of 12 tokens (id 5 i + 3 mod 16, next 5 i + 8); attention as the config key
/// `attention` says.
inline Tensor tiny_gpt2_loss() {
  reset_tensor_state();
  const std::int64_t window = 12, vocab = 16;
  const nn::Gpt2Config config{.vocab_size = vocab, .n_positions = window, .n_embd = 8, .n_layer = 1,
                              .n_head = 2, .accumulate = ir::DType::F32};
  const nn::Gpt2Blocks model(config, "gpt");
  std::vector<std::int64_t> ids, next;
  for (std::int64_t i = 0; i < 2 * window; ++i) {
    ids.push_back((5 * i + 3) % vocab);
    next.push_back((5 * i + 8) % vocab);
  }
  Tensor logits = model.logits(nn::one_hot_of_ids(nn::ids_literal("ids", ids, {2, window}), vocab), window);
  Tensor targets = nn::one_hot_of_ids(nn::ids_literal("next", next, {2, window}), vocab);
  return nn::cross_entropy_loss(logits, targets);
}

/// The demo's MLP (2 -> hidden -> 2, relu) on `samples` half-moons points in batches of 32.
struct MoonsMlp {
  Tensor loss;
  ir::StaticSymbol batch;
  std::int64_t n_batches = 0;
};
inline MoonsMlp moons_mlp(std::int64_t samples, std::int64_t hidden) {
  using Dims = std::vector<std::int64_t>;
  reset_tensor_state();
  const auto data = datasets::moons({.samples = samples, .noise = 0.1, .seed = 42});
  const std::int64_t n_batches = samples / 32;
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  Tensor x_all = literal("moons_x", data.features, {.batch = Dims{n_batches, 32}, .output = Dims{2}});
  Tensor y_all = literal("moons_y", data.one_hot(), {.batch = Dims{n_batches, 32}, .output = Dims{2}});
  Tensor w1 = param("w1", {.output = Dims{hidden}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = Dims{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  Tensor logits = w2 * relu(w1 * slice_batch(x_all, batch) + b1) + b2;
  return {nn::cross_entropy(logits, slice_batch(y_all, batch)), batch, n_batches};
}

}  // namespace cannl::testing_util
