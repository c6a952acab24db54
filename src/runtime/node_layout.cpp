#include "runtime/node_layout.h"

#include <numeric>

namespace cannl::runtime {

std::vector<std::int64_t> logical_cell_offsets(const ir::TensorNode& node) {
  const std::int64_t count = node.num_logical_elements();
  std::vector<std::int64_t> offsets;
  if (count <= 0) return offsets;
  offsets.reserve(static_cast<std::size_t>(count));
  if (!node.is_padded()) {
    offsets.resize(static_cast<std::size_t>(count));
    std::iota(offsets.begin(), offsets.end(), std::int64_t{0});
    return offsets;
  }
  const auto logical = node.logical_dims();
  const std::size_t rank = logical.size();
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t k = rank; k-- > 1;) stride[k - 1] = stride[k] * node.dims[k];
  std::vector<std::int64_t> at(rank, 0);  // odometer over the logical index
  for (std::int64_t cell = 0; cell < count; ++cell) {
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < rank; ++k) offset += (at[k] + node.padding[k].left) * stride[k];
    offsets.push_back(offset);
    for (std::size_t k = rank; k-- > 0;) {
      if (++at[k] < logical[k]) break;
      at[k] = 0;
    }
  }
  return offsets;
}

}  // namespace cannl::runtime
