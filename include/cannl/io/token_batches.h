#pragma once
// Token id sequences to rectangular host batches, padded and truncated to one length, in the
// form tensor literals take (row-major values + dims).
//
//   auto batch = io::one_hot_batch({tok.encode("hi"), tok.encode("hello")}, {.length = 8}, 50257);
//   Tensor x = literal("x", batch.values, {.batch = {{batch.dims[0], batch.dims[1]}},
//                                          .output = {{batch.dims[2]}}});

#include <cstdint>
#include <span>
#include <vector>

#include "cannl/io/bpe_tokenizer.h"

namespace cannl::io {

/// How sequences are fitted to `length` positions.
struct BatchLayout {
  std::int64_t length = 0;     // positions per sequence (> 0)
  TokenId pad_id = 0;          // written in padded positions of id batches
  bool keep_last = false;      // truncate from the left, keeping the last tokens (LM context)
  bool pad_left = false;       // put padding before the tokens instead of after
};

/// Row-major host values with their dims, and which positions hold real tokens.
struct HostBatch {
  std::vector<double> values;
  std::vector<std::int64_t> dims;
  std::vector<double> mask;  // [batch, length]: 1 at real tokens, 0 at padding
};

/// A [batch, length] batch of ids (as doubles, exact below 2^53).
///   token_id_batch({{5, 6, 7}}, {.length = 2}).values == {5, 6}
HostBatch token_id_batch(std::span<const std::vector<TokenId>> sequences, const BatchLayout& layout);

/// A [batch, length, vocab_size] one-hot batch; padded positions are all zeros (so they add
/// nothing to an embedding gather). Throws RuntimeUsageError for an id outside [0, vocab_size).
///   one_hot_batch({{2}}, {.length = 2}, 3).values == {0, 0, 1,  0, 0, 0}
HostBatch one_hot_batch(std::span<const std::vector<TokenId>> sequences, const BatchLayout& layout,
                        std::int64_t vocab_size);

}  // namespace cannl::io
