// Multi-head self-attention and the pre-LN transformer decoder block.
#include <cmath>

#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/nn/ops.h"
#include "cannl/nn/positions.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::nn {
namespace {

/// Additive-mask stand-in: masked scores become -1e9, whose exp underflows to 0 like -inf's.
constexpr double kMaskedScore = -1e9;

AttentionOptions checked(const std::string& label, AttentionOptions o) {
  if (o.d_v == 0) o.d_v = o.d_k;
  if (o.heads <= 0 || o.d_k <= 0 || o.d_v <= 0 || o.d_model <= 0)
    throw RuntimeUsageError("attention '" + label +
                            "': heads, d_k, d_v and d_model must be > 0 (heads=" +
                            std::to_string(o.heads) + ", d_k=" + std::to_string(o.d_k) +
                            ", d_model=" + std::to_string(o.d_model) + ")");
  return o;
}

AttentionKernel configured_kernel() {
  return config::get_one_of<AttentionKernel>(
      "attention",
      {{"auto", AttentionKernel::Auto}, {"fused", AttentionKernel::Fused}, {"unfused", AttentionKernel::Unfused}});
}

}  // namespace

bool fused_attention_pays(AttentionKernel kernel, std::optional<std::int64_t> causal_seq, std::int64_t heads,
                          bool has_mask) {
  if (has_mask && !causal_seq) return false;  // only a causal mask has a fused form
  if (kernel == AttentionKernel::Auto) kernel = configured_kernel();
  switch (kernel) {
    case AttentionKernel::Fused: return true;
    case AttentionKernel::Unfused: return false;
    case AttentionKernel::Auto: break;
  }
  // Without a mask the length is not known when the graph is built (shapes are inferred later),
  // so only a causal attention is fused here.
  if (!causal_seq) return false;
  const std::int64_t n = *causal_seq;
  return n >= kFusedAttentionMinScoresBytes / (2 * 4 * heads * n);
}

MultiHeadAttention::MultiHeadAttention(const std::string& label, const AttentionOptions& options)
    : q(label + "_q", {checked(label, options).heads, options.d_k}, options.bias),
      k(label + "_k", {options.heads, options.d_k}, options.bias),
      v(label + "_v", {options.heads, checked(label, options).d_v}, options.bias),
      o(label + "_o", {options.d_model}, options.bias),
      options(checked(label, options)) {}

Tensor MultiHeadAttention::operator()(const Tensor& x, const std::optional<Tensor>& mask) const {
  // Queries at positions s, keys and values at positions t (both batch axes of x).
  Tensor queries = q(x), keys = k(x);
  if (options.rope) {
    RopeOptions r = *options.rope;
    if (r.head_dim == 0) r.head_dim = options.d_k;
    queries = rope(queries, r);
    keys = rope(keys, r);
  }
  const std::optional<std::int64_t> causal_seq = mask ? causal_mask_length(*mask) : std::nullopt;
  if (fused_attention_pays(options.kernel, causal_seq, options.heads, mask.has_value())) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(options.d_k));
    return o(fused_attention(queries, keys, v(x), {.causal = mask.has_value(), .scale = scale}));
  }
  Tensor scores = einsum("... s | -> h d; ... t | -> h d => ... s | t -> h", queries, keys);
  scores = pointmul(constant(1.0 / std::sqrt(static_cast<double>(options.d_k))), scores);
  if (mask) scores = where(*mask, scores, constant(kMaskedScore));
  Tensor attn = softmax(scores, "... | t -> ... => ... | -> ...");
  Tensor mixed = einsum("... s | t -> h; ... t | -> h e => ... s | -> h e", attn, v(x));
  return o(mixed);
}

namespace {
DecoderOptions checked(const std::string& label, DecoderOptions o) {
  if (o.d_ff == 0) o.d_ff = 4 * o.d_model;
  if (o.heads <= 0 || o.d_model <= 0 || o.d_model % o.heads != 0)
    throw RuntimeUsageError("decoder block '" + label +
                            "': d_model must be a positive multiple of heads (d_model=" +
                            std::to_string(o.d_model) + ", heads=" + std::to_string(o.heads) + ")");
  return o;
}
}  // namespace

DecoderBlock::DecoderBlock(const std::string& label, const DecoderOptions& options)
    : ln1(label + "_ln1", {.eps = checked(label, options).ln_eps}),
      ln2(label + "_ln2", {.eps = options.ln_eps}),
      attn(label + "_attn", {.heads = options.heads, .d_k = options.d_model / options.heads,
                             .d_model = options.d_model}),
      fc(label + "_fc", {checked(label, options).d_ff}),
      proj(label + "_proj", {options.d_model}) {}

Tensor DecoderBlock::operator()(const Tensor& x, const Tensor& mask) const {
  Tensor h = x + attn(ln1(x), mask);
  return h + proj(gelu(fc(ln2(h))));
}

}  // namespace cannl::nn
