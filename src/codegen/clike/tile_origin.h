#pragma once
// A matmul tile's operand accesses as renderers take them (ir::TileMma): the base cell with the
// tile's symbols at their first values, the rest of each index (enclosing loops, statics) kept.
//
//   at_tile_origin(a[i0 + 2, i2], tile with i0 in [4, 8), i2 in [0, 16)) == a[6, 0]

#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::codegen {

std::vector<ir::AxisIndex> at_tile_origin(std::vector<ir::AxisIndex> index, const ir::TileMma& t);

}  // namespace cannl::codegen
