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
};
struct LayerNorm {
  explicit LayerNorm(const std::string& label, const LayerNormOptions& options = {});
  Tensor operator()(const Tensor& x) const;
  Tensor gamma, beta;
  LayerNormOptions options;
};

/// Embedding table [dim <- vocab] applied to a one-hot tensor (see one_hot_of_ids): the product
/// selects a row per id (a gather once the optimizer rewrites it).
///   Embedding wte("wte", 50257, 768);  Tensor h = wte(one_hot_of_ids(ids, 50257));
struct Embedding {
  Embedding(const std::string& label, std::int64_t vocab, std::int64_t dim);
  Tensor operator()(const Tensor& one_hot) const;
  Tensor table;
};

/// Multi-head self-attention over a sequence batch axis: x has batch [..., seq] and output
/// [d_model]. q, k, v = W x (+ b) with outputs [heads, d_k]; scores = q.k / sqrt(d_k) with
/// batch [..., s], input [t], output [heads]; masked by where(mask, scores, -1e9); softmax over
/// t; out = W_o (attn . v) (+ b_o).
///   MultiHeadAttention mha("attn", {.heads = 4, .d_k = 8, .d_model = 32});
///   Tensor y = mha(x, causal_mask(seq));
struct AttentionOptions {
  std::int64_t heads = 1;
  std::int64_t d_k = 0;
  std::int64_t d_v = 0;       // 0 = d_k
  std::int64_t d_model = 0;   // output size of W_o
  bool bias = true;
};
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

}  // namespace cannl::nn
