#pragma once
// Blocks with parameters (semantics-frontend.md 8, with the 0.8 fixes): each block creates its
// parameters when it is constructed (names prefixed by its label) and is applied as a function.
// Shapes follow OCANNL's convention: examples and sequence positions are batch axes, features are
// output axes; parameter rows are inferred from the first use unless given.
//
//   nn::LayerNorm ln("ln1");
//   nn::Linear fc("fc", {16});
//   Tensor y = fc(nn::gelu(ln(x)));

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cannl/nn/positions.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

using Dims = std::vector<std::int64_t>;

/// w * x + b with w: output `out_dims`, input inferred from x's output row.
///   Linear fc("fc", {16});  Tensor y = fc(x);   // fc.w is [16 <- x's features]
struct Linear {
  Linear(const std::string& label, Dims out_dims, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Tensor w;
  std::optional<Tensor> b;
  /// When set, w * x + b is accumulated in this dtype and rounded once to x's dtype (e.g. F64
  /// for f32 models whose long sums must match a reference closely: GPT-2's 768 and 3072 terms).
  std::optional<ir::DType> accumulate;
};

/// relu(w_k * h + b_k) for every hidden size, then an output layer w_out * h (+ b_out).
///   Mlp mlp("mlp", {.hidden = {32, 32}, .out = {2}});
struct MlpOptions {
  Dims hidden;
  Dims out;
  bool output_bias = false;  // OCANNL's mlp has none
};
struct Mlp {
  Mlp(const std::string& label, const MlpOptions& options);
  Tensor operator()(const Tensor& x) const;
  std::vector<Linear> layers;  // hidden layers, then the output layer
};

/// LayerNorm over the output axes (PyTorch semantics: mean, biased variance, eps inside the sqrt),
/// y = gamma * (x - mean) / sqrt(var + eps) + beta, gamma init 1, beta init 0.
///   LayerNorm ln("ln_f", {.eps = 1e-5});
struct LayerNormOptions {
  double eps = 1e-5;
  bool affine = true;
  /// When set, the statistics and the normalization are computed in this dtype and the result
  /// rounded once to x's dtype (F64 in GPT-2: its f32 sums of 768 squares drift measurably).
  std::optional<ir::DType> accumulate;
};
struct LayerNorm {
  explicit LayerNorm(const std::string& label, const LayerNormOptions& options = {});
  Tensor operator()(const Tensor& x) const;
  Tensor gamma, beta;
  LayerNormOptions options;
};

/// Whether a block with batch statistics uses those of the current batch and updates its running
/// statistics (Train, PyTorch's module.train()) or uses the running statistics (Eval).
enum class Mode { Train, Eval };

/// BatchNorm (PyTorch semantics): per feature, over every batch axis (BatchNorm1d: x is
/// batch | features; BatchNorm2d: x is batch | h, w, channels, normalized over batch, h and w):
///   Train: y = gamma * (x - mean) / sqrt(var + eps) + beta with the batch mean and biased
///          variance; every routine computing y also updates the running statistics:
///          running_mean = (1 - momentum) running_mean + momentum * mean,
///          running_var  = (1 - momentum) running_var  + momentum * var * n / (n - 1)  (unbiased)
///   Eval:  y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta.
/// The running statistics are host literals (0 and 1 at first) living in the context: the
/// training step advances them, a forward-only routine compiled later in the same context reads
/// them. gamma starts at 1, beta at 0.
///   nn::BatchNorm1d bn("bn1", {.num_features = 64});
///   Tensor h = tanh(bn(w1 * x));                       // training graph: batch statistics
///   Tensor h_eval = tanh(bn(w1 * x_dev, nn::Mode::Eval));  // evaluation graph: running ones
struct BatchNormOptions {
  std::int64_t num_features = 0;  // features (1d) or channels (2d); required
  double eps = 1e-5;
  double momentum = 0.1;          // weight of the batch statistics in the running ones
  bool affine = true;             // false: no gamma / beta
};
class BatchNorm {
 public:
  Tensor operator()(const Tensor& x, Mode mode = Mode::Train) const;
  Tensor gamma, beta;                // params [num_features]
  Tensor running_mean, running_var;  // host literals [num_features], state of the context
  BatchNormOptions options;

 protected:
  /// `reduce_spec`: the unary spec reducing x to its per-feature statistics.
  BatchNorm(const std::string& label, const BatchNormOptions& options, std::string reduce_spec);

 private:
  std::string reduce_spec_;
};
/// BatchNorm over x = batch | features (PyTorch BatchNorm1d on (N, C)).
struct BatchNorm1d : BatchNorm {
  BatchNorm1d(const std::string& label, const BatchNormOptions& options);
};
/// BatchNorm over x = batch | h, w, channels (PyTorch BatchNorm2d on NCHW, channels last here).
struct BatchNorm2d : BatchNorm {
  BatchNorm2d(const std::string& label, const BatchNormOptions& options);
};

/// Embedding table [dim <- vocab] applied to a one-hot tensor (see one_hot_of_ids): the product
/// selects a row per id (a gather once the optimizer rewrites it).
///   Embedding wte("wte", 50257, 768);  Tensor h = wte(one_hot_of_ids(ids, 50257));
struct Embedding {
  Embedding(const std::string& label, std::int64_t vocab, std::int64_t dim);
  Tensor operator()(const Tensor& one_hot) const;
  Tensor table;
};

/// How MultiHeadAttention computes softmax(q.k / sqrt(d_k)) . v:
///  - Unfused: scores and probabilities as nodes of batch [..., s], input [t], output [heads]
///    (masked by where(mask, scores, -1e9)), kept for the backward;
///  - Fused: nn::fused_attention (ops.h), nothing of size [s, t] stored; the mask must be absent
///    or a causal_mask (functional.h), else the block falls back to Unfused;
///  - Auto: the config key `attention` (auto | fused | unfused); its `auto` takes Fused for a
///    causal mask whose unfused scores would be large (see fused_attention_pays).
enum class AttentionKernel { Auto, Fused, Unfused };

/// Multi-head self-attention over a sequence batch axis: x has batch [..., seq] and output
/// [d_model]. q, k, v = W x (+ b) with outputs [heads, d_k]; scores = q.k / sqrt(d_k) with
/// batch [..., s], input [t], output [heads]; masked by where(mask, scores, -1e9); softmax over
/// t; out = W_o (attn . v) (+ b_o). `kernel` chooses how (AttentionKernel).
///   MultiHeadAttention mha("attn", {.heads = 4, .d_k = 8, .d_model = 32});
///   Tensor y = mha(x, causal_mask(seq));
///   MultiHeadAttention rot("attn", {.heads = 4, .d_k = 8, .d_model = 32, .rope = RopeOptions{.seq_len = 16}});
struct AttentionOptions {
  std::int64_t heads = 1;
  std::int64_t d_k = 0;
  std::int64_t d_v = 0;       // 0 = d_k
  std::int64_t d_model = 0;   // output size of W_o
  bool bias = true;
  /// Rotary positions on q and k (positions.h; head_dim 0 = d_k) after their projections.
  std::optional<RopeOptions> rope;
  AttentionKernel kernel = AttentionKernel::Auto;
};

/// The bytes of unfused scores and probabilities (2 heads s^2 f32 cells per sequence, kept for
/// the backward) from which `attention=auto` fuses a causal attention. The fused form saves
/// memory, not time, on the CPU: its nests are scalar dot products where the unfused scores are
/// GEMM tiles, so it is chosen only where the memory would hurt (12 heads of 2048 positions).
inline constexpr std::int64_t kFusedAttentionMinScoresBytes = std::int64_t{256} << 20;

/// Whether MultiHeadAttention computes its attention fused: `kernel` (Auto: the config key
/// `attention`) for `heads` heads and a mask that is absent or causal over `causal_seq`
/// positions (nullopt: some other mask, never fused).
///   fused_attention_pays(AttentionKernel::Auto, std::nullopt, 12, true) == false
///   fused_attention_pays(AttentionKernel::Auto, 2048, 12, true) == true   // config attention=auto
bool fused_attention_pays(AttentionKernel kernel, std::optional<std::int64_t> causal_seq, std::int64_t heads,
                          bool has_mask);
struct MultiHeadAttention {
  MultiHeadAttention(const std::string& label, const AttentionOptions& options);
  Tensor operator()(const Tensor& x, const std::optional<Tensor>& mask = std::nullopt) const;
  Linear q, k, v, o;
  AttentionOptions options;
};

/// Pre-LN transformer decoder block (GPT-2): x + attn(ln1(x), causal), then h + mlp(ln2(h)) with
/// a GELU (tanh) feed-forward of width d_ff.
///   DecoderBlock block("h0", {.heads = 4, .d_model = 32, .d_ff = 128});
struct DecoderOptions {
  std::int64_t heads = 1;
  std::int64_t d_model = 0;
  std::int64_t d_ff = 0;     // 0 = 4 * d_model
  double ln_eps = 1e-5;
};
struct DecoderBlock {
  DecoderBlock(const std::string& label, const DecoderOptions& options);
  Tensor operator()(const Tensor& x, const Tensor& mask) const;
  LayerNorm ln1, ln2;
  MultiHeadAttention attn;
  Linear fc, proj;
};

/// A decoder-only language model over token ids: a token table and learned positions, pre-LN
/// decoder blocks under a causal mask, a final layer norm and an untied output head.
///   DecoderLm lm("tf_", {.vocab = 27, .window = 16, .d_model = 32, .layers = 2, .heads = 4});
///   Tensor logits = lm.logits(ids);   // ids: batch [..., window] -> batch [..., window], [vocab]
/// Parameters are named label + wte, wpe, h<i>, ln_f, head.
struct DecoderLmOptions {
  std::int64_t vocab = 0;
  std::int64_t window = 0;
  std::int64_t d_model = 0;
  std::int64_t layers = 1;
  std::int64_t heads = 1;
  double embedding_stddev = 0.1;
};
struct DecoderLm {
  DecoderLm(const std::string& label, const DecoderLmOptions& options);
  Tensor logits(const Tensor& ids) const;
  DecoderLmOptions options;
  Tensor token_table;
  Embedding positions;
  LayerNorm ln_f;
  Linear head;
  Tensor mask;
  std::vector<DecoderBlock> blocks;
};

}  // namespace cannl::nn

#include "cannl/nn/conv_blocks.h"  // Conv2d, DepthwiseSeparableConv2d, MaxPool2d, AvgPool2d
