#pragma once
// The tensors of a safetensors file by name: an open-addressing table of positions into the
// tensor list (4 bytes a slot, at most half full), instead of a map holding a second copy of
// every name. The header parser fills it as it reads, so a name given twice is found at once.
//
//   TensorIndex index;
//   index.insert(tensors, 0);             // false: tensors[0]'s name is in already
//   index.find(tensors, "wte.weight");    // its position, or nullopt

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cannl/io/safetensors.h"

namespace cannl::io {

class TensorIndex {
 public:
  /// Room for `count` names without growing.
  void reserve(std::size_t count);
  /// Adds tensors[position] by its name; false (nothing added) when a tensor of that name is in.
  bool insert(const std::vector<TensorInfo>& tensors, std::size_t position);
  /// The position in `tensors` (the list insert was given) of the tensor named `name`.
  std::optional<std::size_t> find(const std::vector<TensorInfo>& tensors, std::string_view name) const;

 private:
  /// The slot holding `name`, or the empty slot where it would go.
  std::size_t slot_of(const std::vector<TensorInfo>& tensors, std::string_view name) const;
  void rehash(const std::vector<TensorInfo>& tensors, std::size_t slots);

  std::vector<std::uint32_t> slots_;  // position + 1; 0 is empty
  std::size_t size_ = 0;
};

}  // namespace cannl::io
