// Fitting token sequences into rectangular batches: truncation keeps the first (or last)
// `length` tokens, padding fills the rest (after, or before, the tokens).
#include "cannl/io/token_batches.h"

#include <algorithm>
#include <string>

#include "cannl/support/error.h"

namespace cannl::io {
namespace {

void check_layout(const BatchLayout& layout, std::string_view what) {
  if (layout.length <= 0)
    throw RuntimeUsageError(std::string(what) + ": length must be positive, got " +
                            std::to_string(layout.length));
}

/// The tokens of `sequence` kept and where they start in the row of `length` positions.
struct Placement {
  std::span<const TokenId> kept;
  std::int64_t start;
};

Placement place(const std::vector<TokenId>& sequence, const BatchLayout& layout) {
  std::span<const TokenId> all(sequence);
  const auto size = static_cast<std::int64_t>(all.size());
  const std::int64_t count = std::min(size, layout.length);
  std::span<const TokenId> kept =
      layout.keep_last ? all.subspan(static_cast<std::size_t>(size - count)) : all.first(static_cast<std::size_t>(count));
  return {kept, layout.pad_left ? layout.length - count : 0};
}

HostBatch empty_batch(std::size_t rows, const BatchLayout& layout) {
  HostBatch batch;
  batch.dims = {static_cast<std::int64_t>(rows), layout.length};
  batch.mask.assign(rows * static_cast<std::size_t>(layout.length), 0.0);
  return batch;
}

}  // namespace

HostBatch token_id_batch(std::span<const std::vector<TokenId>> sequences, const BatchLayout& layout) {
  check_layout(layout, "token_id_batch");
  HostBatch batch = empty_batch(sequences.size(), layout);
  batch.values.assign(batch.mask.size(), static_cast<double>(layout.pad_id));
  for (std::size_t row = 0; row < sequences.size(); ++row) {
    Placement p = place(sequences[row], layout);
    for (std::size_t k = 0; k < p.kept.size(); ++k) {
      std::size_t at = row * static_cast<std::size_t>(layout.length) + static_cast<std::size_t>(p.start) + k;
      batch.values[at] = p.kept[k];
      batch.mask[at] = 1.0;
    }
  }
  return batch;
}

HostBatch one_hot_batch(std::span<const std::vector<TokenId>> sequences, const BatchLayout& layout,
                        std::int64_t vocab_size) {
  check_layout(layout, "one_hot_batch");
  if (vocab_size <= 0)
    throw RuntimeUsageError("one_hot_batch: vocab_size must be positive, got " + std::to_string(vocab_size));
  HostBatch batch = empty_batch(sequences.size(), layout);
  batch.dims.push_back(vocab_size);
  batch.values.assign(batch.mask.size() * static_cast<std::size_t>(vocab_size), 0.0);
  for (std::size_t row = 0; row < sequences.size(); ++row) {
    Placement p = place(sequences[row], layout);
    for (std::size_t k = 0; k < p.kept.size(); ++k) {
      TokenId id = p.kept[k];
      if (id < 0 || id >= vocab_size)
        throw RuntimeUsageError("one_hot_batch: token id " + std::to_string(id) + " of sequence " +
                                std::to_string(row) + " is outside [0, " + std::to_string(vocab_size) + ")");
      std::size_t position = row * static_cast<std::size_t>(layout.length) + static_cast<std::size_t>(p.start) + k;
      batch.values[position * static_cast<std::size_t>(vocab_size) + static_cast<std::size_t>(id)] = 1.0;
      batch.mask[position] = 1.0;
    }
  }
  return batch;
}

}  // namespace cannl::io
