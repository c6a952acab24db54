// GPT-2's graph (embeddings, pre-LN decoder blocks, ln_f, tied lm_head) and its forward routine
// over a fixed window.
#include <algorithm>

#include "cannl/nn/functional.h"
#include "cannl/nn/gpt2.h"
#include "cannl/nn/training.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "nn/gpt2_tokens.h"

namespace cannl::nn {
namespace {

/// Why GPT-2's long reductions accumulate in f64 by default (Gpt2Config::accumulate): the contractions over n_embd or 4 n_embd terms (q,
/// k, v, the attention output, the MLP, the lm_head) and the LayerNorms' statistics over n_embd.
/// Summed sequentially in f32 they put the 124M model's last-position logits 1.4e-4 (the tests'
/// relative measure) from exact, beyond the 1e-4 budget and twice PyTorch's own f32 error
/// (6.1e-5: its GEMMs sum in blocks). Accumulating the contractions in f64 and rounding once per
/// output gives 4.3e-5; LayerNorm in f64 too (its sum of 768 squares is the next largest error)
/// gives 1.3e-5. Attention's reductions (head_dim and positions) stay in the model's precision.

std::vector<DecoderBlock> decoder_blocks(const Gpt2Config& c, const std::string& label) {
  std::vector<DecoderBlock> blocks;
  blocks.reserve(static_cast<std::size_t>(c.n_layer));
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    DecoderBlock& block = blocks.emplace_back(
        label + "_h" + std::to_string(i),
        DecoderOptions{.heads = c.n_head, .d_model = c.n_embd, .d_ff = 4 * c.n_embd,
                       .ln_eps = c.layer_norm_epsilon});
    for (Linear* l : {&block.attn.q, &block.attn.k, &block.attn.v, &block.attn.o, &block.fc,
                      &block.proj})
      l->accumulate = c.accumulate;
    block.ln1.options.accumulate = block.ln2.options.accumulate = c.accumulate;
  }
  return blocks;
}

}  // namespace

void detail::check_token(std::int64_t id, std::int64_t position, std::int64_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    throw RuntimeUsageError("gpt2: token id " + std::to_string(id) + " at position " +
                            std::to_string(position) + " is outside [0, " +
                            std::to_string(vocab_size) + ")");
}

Gpt2Blocks::Gpt2Blocks(const Gpt2Config& c, const std::string& label)
    : config(c),
      wte(label + "_wte", c.vocab_size, c.n_embd),
      wpe(label + "_wpe", c.n_positions, c.n_embd),
      h(decoder_blocks(c, label)),
      ln_f(label + "_ln_f", {.eps = c.layer_norm_epsilon, .accumulate = c.accumulate}) {}

Tensor Gpt2Blocks::logits(const Tensor& ids, std::int64_t window) const {
  Tensor x = wte(one_hot_of_ids(ids, config.vocab_size)) +
             wpe(position_one_hot(window, config.n_positions));
  const Tensor mask = causal_mask(window);
  for (const DecoderBlock& block : h) x = block(x, mask);
  // The lm_head is wte itself: contract the features with the table's output axis.
  const Tensor features = ln_f(x);
  return cast(einsum("... | -> d; | v -> d => ... | -> v", cast(features, config.accumulate), wte.table),
              features.value()->dtype);
}

Gpt2::Gpt2(const Gpt2Config& config, runtime::Context ctx, std::int64_t window,
           const std::string& label)
    : blocks_(config, label), ctx_(std::move(ctx)), window_(window), label_(label) {
  if (window < 1 || window > config.n_positions)
    throw RuntimeUsageError("gpt2: the window must be in [1, n_positions=" +
                            std::to_string(config.n_positions) + "], got " + std::to_string(window));
  ids_ = ids_literal(label + "_ids", std::vector<std::int64_t>(static_cast<std::size_t>(window), 0));
  logits_ = blocks_.logits(ids_, window);
  resolve_shapes({logits_});  // the parameters' dims, for uploads before any compile
}

void Gpt2::compile_forward() {
  if (!forward_) forward_ = train::compile_forward(ctx_, {logits_}, label_ + "_forward");
}

std::vector<double> Gpt2::logits(std::span<const std::int64_t> ids) {
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n < 1 || n > window_)
    throw RuntimeUsageError("gpt2: a sequence of " + std::to_string(n) +
                            " tokens does not fit the window of " + std::to_string(window_));
  std::vector<double> padded(static_cast<std::size_t>(window_), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = ids[static_cast<std::size_t>(i)];
    detail::check_token(id, i, config().vocab_size);
    padded[static_cast<std::size_t>(i)] = static_cast<double>(id);
  }
  compile_forward();
  ctx_.set_values(ids_.value(), padded);
  ctx_.run(*forward_);
  std::vector<double> all = ctx_.get_values(logits_.value());
  all.resize(static_cast<std::size_t>(n * config().vocab_size));
  return all;
}

std::vector<double> Gpt2::last_logits(std::span<const std::int64_t> ids) {
  std::vector<double> all = logits(ids);
  const auto vocab = static_cast<std::ptrdiff_t>(config().vocab_size);
  return {all.end() - vocab, all.end()};
}

}  // namespace cannl::nn
