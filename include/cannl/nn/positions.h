#pragma once
// Position information for sequence models: x has batch axes [..., seq] (the last batch axis is
// the position) and output axes [..., d].
//
//   Tensor h = wte(one_hot) + nn::sinusoidal_positions(seq, d_model);
//   nn::LearnedPositions wpe("wpe", 1024, 768);   Tensor h2 = wte(one_hot) + wpe(seq);
//   Tensor q_rot = nn::rope(q, {.seq_len = seq, .head_dim = 8});   // q: batch | heads, 8
#include <cstdint>
#include <string>

#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// The fixed table of Vaswani et al. as a host literal, batch [seq_len], output [d_model]:
///   pe[pos, 2i] = sin(pos / 10000^(2i / d_model)),  pe[pos, 2i + 1] = cos(pos / 10000^(2i / d_model)).
/// Added to embeddings it broadcasts over the other batch axes. Throws RuntimeUsageError unless
/// seq_len > 0 and d_model > 0.
///   Tensor h = emb + sinusoidal_positions(8, 32);
Tensor sinusoidal_positions(std::int64_t seq_len, std::int64_t d_model);

/// Learned absolute positions (GPT-2's wpe): a table [max_len, dim] (an Embedding, N(0, 0.02))
/// whose first seq_len rows are returned with batch [seq_len], output [dim].
///   LearnedPositions wpe("wpe", 16, 32);  Tensor h = emb + wpe(8);
struct LearnedPositions {
  LearnedPositions(const std::string& label, std::int64_t max_len, std::int64_t dim);
  /// Throws RuntimeUsageError unless 0 < seq_len <= max_len.
  Tensor operator()(std::int64_t seq_len) const;
  Tensor table;  // input [max_len], output [dim]
  std::int64_t max_len;
};

/// Rotary position embedding, the GPT-NeoX / LLaMA "rotate half" convention (Hugging Face's
/// apply_rotary_pos_emb): the last output axis of size d (even) is split into halves x1, x2 and
///   rope(x) = x * cos(p theta) + [-x2, x1] * sin(p theta),  theta_i = base^(-2i / d), i < d / 2,
/// with angle index i used for both x1[i] and x2[i] and p the position (0 .. seq_len - 1, the
/// last batch axis of x). (The interleaved convention of GPT-J / Meta's LLaMA code rotates pairs
/// (x[2i], x[2i+1]) instead: a permutation of q and k's features, same attention scores.)
struct RopeOptions {
  std::int64_t seq_len = 0;   // required: the size of x's last batch axis
  std::int64_t head_dim = 0;  // required: d, the size of x's last output axis (even)
  double base = 10000.0;
};
/// Throws RuntimeUsageError unless seq_len > 0, head_dim is even and positive, base > 0.
///   Tensor q_rot = rope(q, {.seq_len = 16, .head_dim = 8});   // q: batch [.., 16] | heads, 8
Tensor rope(const Tensor& x, const RopeOptions& options);

}  // namespace cannl::nn
