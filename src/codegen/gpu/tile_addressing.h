#pragma once
// What the GPU tile printers (tile_printer.cpp, mma_tile_printer.cpp) share: the offsets of a
// tile's rows, columns and steps in an operand (folded tiles included) and the unrolled loops
// over compile-time ranges they print.
//
//   group_offset(groups.rows, t.a, "cannl_r")   // "(cannl_r * 64)": row r of a's tile
//   unrolled_for(p, "cannl_m", 4); ...; close_block(p);

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "codegen/clike/body_printer.h"

namespace cannl::codegen {

/// The element offset, in operand `o`, of index `x` (text, in [0, product of the extents)) over
/// the tile loops `axes` (outermost first): mixed radix, the last loop fastest.
std::string group_offset(const std::vector<ir::TileAxis>& axes, const ir::TileOperand& o, const std::string& x);

/// The stride of the fastest loop of `axes` in `o`: 1 when consecutive indices are neighbours.
std::int64_t fastest_stride(const std::vector<ir::TileAxis>& axes, const ir::TileOperand& o);

/// `#pragma unroll` and a counted loop over the compile-time range [0, n), its body indented.
void unrolled_for(BodyPrinter& p, const std::string& v, std::int64_t n);

/// Ends a block opened by unrolled_for (or any `{` line): dedent, `}`.
void close_block(BodyPrinter& p);

}  // namespace cannl::codegen
