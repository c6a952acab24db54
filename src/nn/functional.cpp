// Softmax, log-softmax, the fused cross-entropy loss, one-hot encodings and masks.
#include "cannl/nn/functional.h"

#include "cannl/support/error.h"

namespace cannl::nn {

Tensor softmax(const Tensor& x, const std::string& reduce_spec) {
  Tensor row_max = stop_gradient(max(x, reduce_spec));
  Tensor e = exp(x - row_max);
  return e / sum(e, reduce_spec);
}

Tensor log_softmax(const Tensor& x, const std::string& reduce_spec) {
  Tensor row_max = stop_gradient(max(x, reduce_spec));
  Tensor shifted = x - row_max;
  return shifted - log(sum(exp(shifted), reduce_spec));
}

Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets,
                          const CrossEntropyOptions& options) {
  if (options.normalize_by && !(*options.normalize_by > 0))
    throw RuntimeUsageError("cross_entropy_loss: normalize_by must be > 0, got " +
                            std::to_string(*options.normalize_by));
  Tensor row_max = stop_gradient(max(logits, kOverOutputs));
  // max and log(sum exp(x - max)) stay apart: their sum would round to an ulp of |max|.
  Tensor log_sum = log(sum_exp_shifted(logits, row_max));
  Tensor target_sum = stop_gradient(sum(targets, kOverOutputs));
  Tensor rows = cross_entropy_rows(logits, targets, row_max, log_sum, target_sum);
  if (options.mask) rows = pointmul(rows, *options.mask);
  if (options.normalize_by) return sum(rows) / constant(*options.normalize_by);
  if (options.mask) return sum(rows) / stop_gradient(sum(*options.mask));
  return mean(rows);
}

Tensor one_hot_of_ids(const Tensor& ids, std::int64_t num_classes) {
  if (num_classes <= 0)
    throw RuntimeUsageError("one_hot_of_ids: num_classes must be > 0, got " +
                            std::to_string(num_classes));
  return eq(range(num_classes), ids);
}

Tensor ids_literal(const std::string& name, const std::vector<std::int64_t>& ids,
                   const std::vector<std::int64_t>& batch_dims) {
  std::vector<double> values(ids.begin(), ids.end());
  std::vector<std::int64_t> batch = batch_dims;
  if (batch.empty()) batch = {static_cast<std::int64_t>(ids.size())};
  return literal(name, std::move(values), {.batch = batch, .input = {}, .output = {}});
}

Tensor causal_mask(std::int64_t seq_len) {
  if (seq_len <= 0)
    throw RuntimeUsageError("causal_mask: seq_len must be > 0, got " + std::to_string(seq_len));
  std::vector<double> values;
  for (std::int64_t s = 0; s < seq_len; ++s)
    for (std::int64_t t = 0; t < seq_len; ++t) values.push_back(t <= s ? 1.0 : 0.0);
  return literal("causal_mask_" + std::to_string(seq_len), std::move(values),
                 {.batch = std::vector<std::int64_t>{seq_len},
                  .input = std::vector<std::int64_t>{seq_len}, .output = {}});
}

std::optional<std::int64_t> causal_mask_length(const Tensor& mask) {
  const auto& values = mask.impl().host_values;
  if (!values || !mask.args().empty()) return std::nullopt;
  const auto batch = shape::row_dims(*mask.shape(), shape::RowKind::Batch);
  const auto input = shape::row_dims(*mask.shape(), shape::RowKind::Input);
  const auto output = shape::row_dims(*mask.shape(), shape::RowKind::Output);
  if (batch.size() != 1 || input != batch || !output.empty()) return std::nullopt;
  const std::int64_t n = batch[0];
  if (values->size() != static_cast<std::size_t>(n * n)) return std::nullopt;
  for (std::int64_t s = 0; s < n; ++s)
    for (std::int64_t t = 0; t < n; ++t)
      if ((*values)[static_cast<std::size_t>(s * n + t)] != (t <= s ? 1.0 : 0.0)) return std::nullopt;
  return n;
}

Tensor position_one_hot(std::int64_t seq_len, std::int64_t max_len) {
  if (seq_len <= 0 || seq_len > max_len)
    throw RuntimeUsageError("position_one_hot: need 0 < seq_len <= max_len, got seq_len " +
                            std::to_string(seq_len) + ", max_len " + std::to_string(max_len));
  // A selector over the positions 0 .. seq_len - 1 rather than a literal matrix: the optimizer
  // turns the table's product with it into a row gather (and its gradient into a scatter).
  std::vector<std::int64_t> positions(static_cast<std::size_t>(seq_len));
  for (std::int64_t s = 0; s < seq_len; ++s) positions[static_cast<std::size_t>(s)] = s;
  return one_hot_of_ids(ids_literal("positions_" + std::to_string(seq_len), positions), max_len);
}

Tensor dropout(const Tensor& x, const ir::StaticSymbol& step, const DropoutOptions& options) {
  if (!(options.rate >= 0 && options.rate < 1))
    throw RuntimeUsageError("dropout: rate must lie in [0, 1), got " + std::to_string(options.rate));
  if (options.rate == 0 || !options.training) return x;
  Tensor keep = lt(constant(options.rate), uniform_at(x, step, options.stream));
  return pointmul(pointmul(x, keep), constant(1.0 / (1.0 - options.rate)));
}

}  // namespace cannl::nn
