// Open addressing with linear probing over a power-of-two table (see tensor_index.h).
#include "io/tensor_index.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <utility>

#include "cannl/support/error.h"

namespace cannl::io {

void TensorIndex::reserve(std::size_t count) {
  // The empty table's slots are rebuilt from nothing: rehash needs no tensors then.
  if (slots_.empty()) slots_.assign(std::bit_ceil(std::max<std::size_t>(8, 2 * count)), 0);
}

std::size_t TensorIndex::slot_of(const std::vector<TensorInfo>& tensors, std::string_view name) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t slot = std::hash<std::string_view>{}(name) & mask;; slot = (slot + 1) & mask)
    if (slots_[slot] == 0 || tensors[slots_[slot] - 1].name == name) return slot;
}

void TensorIndex::rehash(const std::vector<TensorInfo>& tensors, std::size_t slots) {
  std::vector<std::uint32_t> old = std::exchange(slots_, std::vector<std::uint32_t>(slots, 0));
  for (std::uint32_t entry : old)
    if (entry != 0) slots_[slot_of(tensors, tensors[entry - 1].name)] = entry;
}

bool TensorIndex::insert(const std::vector<TensorInfo>& tensors, std::size_t position) {
  // A header holds at most a few hundred thousand tensors (its value limit); 32 bits are ample.
  if (position >= std::numeric_limits<std::uint32_t>::max())
    throw InternalError("TensorIndex: position " + std::to_string(position) + " past 32 bits");
  if (2 * (size_ + 1) > slots_.size()) rehash(tensors, std::bit_ceil(std::max<std::size_t>(8, 4 * (size_ + 1))));
  const std::size_t slot = slot_of(tensors, tensors[position].name);
  if (slots_[slot] != 0) return false;
  slots_[slot] = static_cast<std::uint32_t>(position + 1);
  ++size_;
  return true;
}

std::optional<std::size_t> TensorIndex::find(const std::vector<TensorInfo>& tensors, std::string_view name) const {
  if (slots_.empty()) return std::nullopt;
  const std::uint32_t entry = slots_[slot_of(tensors, name)];
  if (entry == 0) return std::nullopt;
  return entry - 1;
}

}  // namespace cannl::io
