// GPT-2's generation step: one position per run with a key-value cache. The routine is compiled
// once for every position: the token and the position are run-time indices (static symbols), the
// embedding rows are gathers at them, each layer writes the position's keys and values into its
// cache (host literals living in the context, written in place) and attends to the cache rows
// the causal mask's row at that position lets through. Rows after the position hold zeros or
// stale values of an earlier sequence; the mask gives them weight exactly 0.
#include <cmath>

#include "cannl/nn/functional.h"
#include "cannl/nn/gpt2.h"
#include "cannl/nn/ops.h"
#include "cannl/nn/training.h"
#include "cannl/support/error.h"
#include "nn/gpt2_tokens.h"

namespace cannl::nn {
namespace {

/// The same masked score as MultiHeadAttention's: exp underflows to exactly 0.
constexpr double kMaskedScore = -1e9;

/// `l` (sharing its parameters) accumulating in `dtype`.
Linear accumulating(Linear l, ir::DType dtype) {
  l.accumulate = dtype;
  return l;
}

/// MultiHeadAttention's computation for one query position against the cached positions t.
Tensor attend_cached(MultiHeadAttention a, const Tensor& x, const Gpt2LayerCache& cache,
                     const Tensor& visible, const ir::StaticSymbol& position, ir::DType accumulate) {
  for (Linear* l : {&a.q, &a.k, &a.v, &a.o}) *l = accumulating(*l, accumulate);
  const Tensor keys = write_at(a.k(x), cache.keys, position);
  const Tensor values = write_at(a.v(x), cache.values, position);
  Tensor scores = einsum("| -> h d; t | -> h d => | t -> h", a.q(x), keys);
  scores = pointmul(constant(1.0 / std::sqrt(static_cast<double>(a.options.d_k))), scores);
  scores = where(visible, scores, constant(kMaskedScore));
  const Tensor attn = softmax(scores, "... | t -> ... => ... | -> ...");
  return a.o(einsum("| t -> h; t | -> h e => | -> h e", attn, values));
}

Gpt2LayerCache layer_cache(const std::string& label, std::int64_t window, std::int64_t heads,
                           std::int64_t head_dim) {
  const auto zeros = [&] { return std::vector<double>(static_cast<std::size_t>(window * heads * head_dim), 0.0); };
  const LeafOptions shape{.batch = std::vector<std::int64_t>{window}, .input = {},
                          .output = std::vector<std::int64_t>{heads, head_dim}};
  return {literal(label + "_keys", zeros(), shape), literal(label + "_values", zeros(), shape)};
}

}  // namespace

Tensor Gpt2Blocks::step_logits(const ir::StaticSymbol& token, const ir::StaticSymbol& position,
                               const std::vector<Gpt2LayerCache>& caches) const {
  internal_check(caches.size() == h.size(), "gpt2 step: one cache per layer");
  Tensor x = gather_at(wte.table, token) + gather_at(wpe.table, position);
  const Tensor visible = slice_batch(causal_mask(position.range), position);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const DecoderBlock& block = h[i];
    const ir::DType acc = config.step_accumulate;
    const Tensor mixed = x + attend_cached(block.attn, block.ln1(x), caches[i], visible, position, acc);
    x = mixed + accumulating(block.proj, acc)(gelu(accumulating(block.fc, acc)(block.ln2(mixed))));
  }
  const Tensor features = ln_f(x);
  return cast(einsum("... | -> d; | v -> d => ... | -> v", cast(features, config.step_accumulate), wte.table),
              features.value()->dtype);
}

void Gpt2::compile_step() {
  if (step_) return;
  const Gpt2Config& c = config();
  token_ = {ir::fresh_symbol(), c.vocab_size, "token"};
  position_ = {ir::fresh_symbol(), window_, "position"};
  caches_.clear();
  for (std::int64_t i = 0; i < c.n_layer; ++i)
    caches_.push_back(layer_cache(label_ + "_h" + std::to_string(i), window_, c.n_head, c.n_embd / c.n_head));
  step_logits_ = blocks_.step_logits(token_, position_, caches_);
  step_ = train::compile_forward(ctx_, {step_logits_}, label_ + "_step");
}

std::vector<double> Gpt2::step(std::int64_t id, std::int64_t position) {
  if (position < 0 || position >= window_)
    throw RuntimeUsageError("gpt2: position " + std::to_string(position) + " is outside the window [0, " +
                            std::to_string(window_) + ")");
  detail::check_token(id, position, config().vocab_size);
  compile_step();
  std::vector<std::int64_t> statics;
  for (const ir::StaticSymbol& s : step_->statics()) {
    internal_check(s.symbol == token_.symbol || s.symbol == position_.symbol,
                   [&] { return "gpt2 step: unexpected run-time index " + s.name; });
    statics.push_back(s.symbol == token_.symbol ? id : position);
  }
  ctx_.run(*step_, statics);
  return ctx_.get_values(step_logits_.value());
}

}  // namespace cannl::nn
