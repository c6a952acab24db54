#pragma once
// Primitive tensor operations of the nn blocks whose gradients are written by hand (one fused
// assignment each) rather than derived from a composition of simpler ops.
//
//   Tensor h = nn::gelu(w * x);                              // tanh-approximate GELU
//   Tensor m = stop_gradient(max(logits, nn::kOverOutputs)); // detached row max
//   Tensor log_sum = log(nn::sum_exp_shifted(logits, m));
//   Tensor rows = nn::cross_entropy_rows(logits, targets, m, log_sum, sum(targets, nn::kOverOutputs));

#include <optional>

#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// Unary spec reducing every output axis (batch and input axes are kept):
/// sum(x, kOverOutputs) of x with shape `4|->10` has shape `4`.
inline constexpr const char* kOverOutputs = "...|...->... => ...|...->";

/// GELU, tanh approximation (Hendrycks & Gimpel; PyTorch `approximate="tanh"`):
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), one pointwise op with an exact derivative.
///   gelu(constant(1.0)) ~= 0.841192
Tensor gelu(const Tensor& x);

/// sum over the output axes of exp(logits - row_max), in one reduction with no [rows, classes]
/// temporary. Not differentiable (its log only feeds the detached log_sum of cross_entropy_rows).
/// `row_max` has logits' batch and input axes and no output axes.
///   Tensor s = sum_exp_shifted(logits, stop_gradient(max(logits, kOverOutputs)));
Tensor sum_exp_shifted(const Tensor& logits, const Tensor& row_max);

/// Fused softmax cross-entropy per row, on logits shifted by their row's max:
///   rows = sum_v targets_v (log_sum - (logits_v - row_max)),
/// where row_max is the row's (detached) max, log_sum = log sum_v exp(logits_v - row_max) and
/// target_sum the row's sum of targets (1 for one-hot rows). max and log_sum are kept apart so
/// that large logits (1000, 30000) lose nothing: their sum, the log-sum-exp, would round to an ulp
/// of |max|. Its backward writes, in one assignment over [rows, classes],
///   grad_logits += g * (target_sum * exp((logits - row_max) - log_sum) - targets)
/// (the exact derivative, since the loss does not depend on the shift) and
/// grad_targets += g * (log_sum - (logits - row_max)); no gradient flows to row_max, log_sum or
/// target_sum, so nothing of size [rows, classes] is materialized besides the gradients themselves.
///   Tensor rows = cross_entropy_rows(logits, onehot, m, log(sum_exp_shifted(logits, m)),
///                                    sum(onehot, kOverOutputs));
Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, const Tensor& row_max,
                          const Tensor& log_sum, const Tensor& target_sum);

/// Scaled dot-product attention in one fused op: out_s = sum_t softmax_t(scale q_s . k_t) v_t over
/// q: batch [..., s] output [h, d], k: [..., t | -> h, d], v: [..., t | -> h, e]; the result is
/// [..., s | -> h, e]. Computed per query row by an online softmax (a running maximum m and sum
/// l, the output row rescaled as m grows), keeping the row's max m and log(l) apart (two small
/// [..., s, h] nodes: their sum, the log-sum-exp, would round to an ulp of m, 2^-9 at scores of
/// 3e4); the backward recomputes the probabilities exp((scale q.k - m) - log(l)) from q, k and
/// those two (FlashAttention-2: D_s = dO_s . O_s, dS = P (dP - D)), one nest per gradient with the query (dq) or the key
/// position (dk, dv) outermost, so nothing of size [s, t] is ever stored. With `causal`, the keys
/// t > s are skipped (s and t must then be one axis each of equal length: a causal mask's shape).
/// Every product and sum is in the compute dtype of the result (f32 for f32, bf16 and f16
/// inputs): the precision policy's rounding of matmul operands does not apply.
///   Tensor mixed = fused_attention(q, k, v, {.causal = true, .scale = 1 / std::sqrt(8.0)});
struct FusedAttentionOptions {
  bool causal = false;
  double scale = 1.0;
};
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                       const FusedAttentionOptions& options);

/// Uniform [0, 1) values of x's shape from a counter-based threefry stream: the cell's row-major
/// offset is the counter and the key mixes `name`, the `seed` config key, the run-time value of
/// `step` and the training steps done so far: a one-cell u64 literal `<name>_steps_done` (0 when
/// uploaded) that train::compile_step and train::data_parallel advance by 1 after every step,
/// keep in checkpoints (state/<name>_steps_done) and restore. So under train::fit every global
/// step draws fresh values, also where `step` is the batch symbol and its values come round
/// again each epoch, and a resumed run draws what an uninterrupted one draws; outside training
/// (a forward routine) a rerun of the same step repeats them. x's values are not read; the
/// result is not differentiable.
///   Tensor u = uniform_at(h, step_symbol, "dropout1");
Tensor uniform_at(const Tensor& x, const ir::StaticSymbol& step, const std::string& name);

/// The steps-done literals of every uniform_at in the graphs of `roots` (TensorImpl::step_counter).
/// Throws RuntimeUsageError when two of them share a name: two uniform_at (dropout) sites of one
/// stream draw the same values, and their counters would share a checkpoint entry.
///   for (const Tensor& c : step_counters_of({loss})) ...
std::vector<Tensor> step_counters_of(const std::vector<Tensor>& roots);

/// counter += 1 for each of `counters` (u64, so it never rounds): the end of a training step.
///   step.body.push_back(ir::make_block("count the step", advance_step_counters(counters)));
std::vector<ir::AsgnRef> advance_step_counters(const std::vector<Tensor>& counters);

struct RunningAverageOptions {
  double momentum = 0.1;  // weight of the new value, in [0, 1] (PyTorch's BatchNorm momentum)
  /// When given, the statistic is a biased variance over the cells of this tensor and the state
  /// tracks the unbiased one: the new value is scaled by n / (n - 1), n = cells per statistic.
  std::optional<Tensor> unbiased_over;
};
/// `stat` unchanged (its gradient passes straight through), whose forward code also folds it into
/// the running average kept in `running`, a host literal of stat's dims that serves as a state
/// buffer of the context:  running = (1 - momentum) running + momentum * scale * stat.
/// Every routine computing the result advances the state (BatchNorm's training statistics).
/// Throws RuntimeUsageError for a momentum outside [0, 1] or a `running` that is not a literal;
/// ShapeError (when code is built) when the dims differ or n < 2.
///   Tensor mu = running_average(mean(x, spec), running_mean, {.momentum = 0.1});
Tensor running_average(const Tensor& stat, const Tensor& running,
                       const RunningAverageOptions& options = {});

/// Row `index` of a table with one input axis: result[o...] = table[o..., index] with the input
/// axis dropped, `index` bound at run time (a gather: the generated code reads that row only,
/// where table * one_hot reads every row). Not differentiable. Throws ShapeError (when code is
/// built) unless 1 <= index.range <= the table's rows.
///   Tensor x = gather_at(wte.table, token);   // token: StaticSymbol with range vocab
Tensor gather_at(const Tensor& table, const ir::StaticSymbol& index);

/// Writes `value` (no batch axes, any output axes) into row `index` (run time) of the batch axis
/// of `cache`, a host literal of batch [index.range] and value's output axes, and returns the cache after the write. The cache is a
/// state buffer of the context, updated in place by every routine computing the result (a
/// transformer's keys and values of earlier positions). Not differentiable. Throws
/// RuntimeUsageError for a cache that is not a host literal; ShapeError (when code is built) for a
/// cache without a leading batch axis of index's range or with other dims than value's.
///   Tensor keys = write_at(k(x), key_cache, position);   // key_cache: batch [window], output [h, d]
Tensor write_at(const Tensor& value, const Tensor& cache, const ir::StaticSymbol& index);
}  // namespace cannl::nn
