#pragma once
// Where the logical (unpadded) cells of a node live in its padded buffer.
//
//   node dims {4, 5}, padding {{1,1},{1,1}}: logical cell k of the 2x3 interior is at
//   logical_cell_offsets(node)[k] = (1 + k/3) * 5 + 1 + k%3   (in elements)

#include <cstdint>
#include <vector>

#include "cannl/ir/tensor_node.h"

namespace cannl::runtime {

/// Element offsets into the padded buffer of each logical cell, in row-major logical order.
std::vector<std::int64_t> logical_cell_offsets(const ir::TensorNode& node);

}  // namespace cannl::runtime
