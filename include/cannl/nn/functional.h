#pragma once
// Parameter-free building blocks: softmax, log-softmax, the fused cross-entropy loss, one-hot
// encodings and attention masks (semantics-frontend.md 5.6, 8; 0.8 notes "Fused cross-entropy").
//
//   Tensor p = nn::softmax(logits);                                  // over the output axes
//   Tensor loss = nn::cross_entropy_loss(logits, nn::one_hot_of_ids(ids, 10));

#include <cstdint>
#include <optional>
#include <string>

#include "cannl/nn/ops.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// Softmax over the axes `reduce_spec` reduces (a unary spec whose result keeps the other axes;
/// default: every output axis). The row max is detached; the result has x's shape.
///   softmax(scores, "...|t->h => ...|->h")   // over the input axis t of attention scores
Tensor softmax(const Tensor& x, const std::string& reduce_spec = kOverOutputs);

/// log(softmax(x)) computed stably as x - max - log(sum(exp(x - max))).
///   Tensor logp = log_softmax(logits);
Tensor log_softmax(const Tensor& x, const std::string& reduce_spec = kOverOutputs);

struct CrossEntropyOptions {
  /// Per-row weights (e.g. 0 for padding), shaped like the rows (logits without output axes).
  std::optional<Tensor> mask;
  /// The summed row losses are divided by this; default: the number of rows (a mean).
  std::optional<double> normalize_by;
};

/// Softmax cross-entropy from raw logits over the output axes, with targets of logits' shape
/// (one-hot or probabilities). The row max detached and kept apart from log(sum exp(x - max)),
/// so adding a constant to every logit (1000, 30000) changes the loss and its gradient by a few
/// ulps of their own size, not of the logits'; the per-row losses come
/// from the fused op cross_entropy_rows, whose backward writes probs - targets straight into the
/// logits gradient. Result: a scalar.
///   Tensor loss = cross_entropy_loss(logits, targets, {.mask = pad_mask, .normalize_by = 12});
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets,
                          const CrossEntropyOptions& options = {});

/// (range(num_classes) == ids): ids with batch axes and no output axes give a 0/1 tensor with the
/// same batch axes and output [num_classes]; an out-of-range or fractional id gives a zero row.
///   one_hot_of_ids(literal("ids", {2, 0}, {.batch = Dims{2}}), 3)  // [[0,0,1],[1,0,0]]
Tensor one_hot_of_ids(const Tensor& ids, std::int64_t num_classes);

/// Host literal of token ids: batch [ids.size()], no output axes.
///   Tensor ids = ids_literal("tokens", {5, 1, 4});
Tensor ids_literal(const std::string& name, const std::vector<std::int64_t>& ids,
                   const std::vector<std::int64_t>& batch_dims = {});

/// Causal attention mask: batch [seq] (query position s), input [seq] (key position t), value 1
/// where t <= s, else 0 (1 = attend).
///   Tensor mask = causal_mask(8);
Tensor causal_mask(std::int64_t seq_len);
/// The sequence length of a causal mask: a literal of batch [n] and input [n] whose cell (s, t)
/// is 1 exactly when t <= s (what causal_mask makes); nullopt for any other tensor.
///   causal_mask_length(causal_mask(8)) == 8
std::optional<std::int64_t> causal_mask_length(const Tensor& mask);

/// One-hot positions 0..seq_len-1: batch [seq_len], output [max_len] (for learned positions), as
/// a selector `eq(range(max_len), positions)` that the optimizer turns into a row gather. Like any
/// operation's result its batch row takes the broadcast axes of the graph it is used in: make
/// one per graph (a model's logits(), not its constructor).
///   Tensor pos = position_one_hot(8, 1024);
Tensor position_one_hot(std::int64_t seq_len, std::int64_t max_len);

struct DropoutOptions {
  double rate = 0.0;             // probability of zeroing a cell, in [0, 1)
  bool training = true;          // false: identity (inference)
  std::string stream = "dropout";  // names the random stream (use one per dropout site)
};

/// Inverted dropout: x * (rate < u) / (1 - rate) with u = uniform_at(x, step, stream), so the
/// mask changes every step (counter-based threefry keyed by the step symbol and by the training
/// steps done, which train::compile_step advances and checkpoints keep: under train::fit, where
/// `step` is the batch symbol, epoch 2 draws other masks than epoch 1, and a resumed run the
/// masks of an uninterrupted one). The identity when rate is 0 or not training. Throws
/// RuntimeUsageError unless 0 <= rate < 1; compile_step throws it for two sites of one stream.
///   Tensor h = dropout(x, step, {.rate = 0.1, .stream = "attn_drop"});
Tensor dropout(const Tensor& x, const ir::StaticSymbol& step, const DropoutOptions& options);

}  // namespace cannl::nn
