// Decoder-only language model (see blocks.h).
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"

namespace cannl::nn {

DecoderLm::DecoderLm(const std::string& label, const DecoderLmOptions& options)
    : options(options),
      token_table(param(label + "wte",
                        {.input = Dims{options.vocab},
                         .output = Dims{options.d_model},
                         .init = {.kind = InitKind::Normal, .stddev = options.embedding_stddev}})),
      positions(label + "wpe", options.window, options.d_model),
      ln_f(label + "ln_f"),
      head(label + "head", {options.vocab}),
      mask(causal_mask(options.window)) {
  for (std::int64_t i = 0; i < options.layers; ++i)
    blocks.emplace_back(label + "h" + std::to_string(i),
                        DecoderOptions{.heads = options.heads,
                                       .d_model = options.d_model,
                                       .d_ff = 4 * options.d_model});
}

Tensor DecoderLm::logits(const Tensor& ids) const {
  // A selector made per call: its batch row takes the batch axes of this graph's ids.
  Tensor x;
  {
    PrecisionScope exact(PrecisionPolicy{});  // lookups (Embedding::operator())
    x = token_table * one_hot_of_ids(ids, options.vocab) +
        positions(position_one_hot(options.window, options.window));
  }
  for (const auto& block : blocks) x = block(x, mask);
  return head(ln_f(x));
}

}  // namespace cannl::nn
