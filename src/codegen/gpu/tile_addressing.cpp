// The GPU tile printers' shared addressing and loops (tile_addressing.h).
#include "codegen/gpu/tile_addressing.h"

#include <cstdlib>

namespace cannl::codegen {

// The element offset, in operand `o`, of index `x` (text, in [0, product of the extents)) over
// the tile loops `axes` (outermost first): mixed radix, the last loop fastest.
std::string group_offset(const std::vector<ir::TileAxis>& axes, const ir::TileOperand& o, const std::string& x) {
  std::string out;
  std::int64_t inner = 1;
  for (std::size_t q = axes.size(); q-- > 0;) {
    const ir::TileAxis& axis = axes[q];
    const std::int64_t stride = ir::flat_stride(*o.node, o.index, axis.symbol);
    if (stride != 0 && axis.extent() > 1) {
      std::string digit = inner == 1 ? x : "(" + x + " / " + std::to_string(inner) + ")";
      if (q > 0) digit = "(" + digit + " % " + std::to_string(axis.extent()) + ")";
      out += (out.empty() ? "" : " + ") + (stride == 1 ? digit : digit + " * " + std::to_string(stride));
    }
    inner *= axis.extent();
  }
  return out.empty() ? "0" : "(" + out + ")";
}

// The stride of the fastest loop of `axes` in `o`: 1 when consecutive indices are neighbours.
std::int64_t fastest_stride(const std::vector<ir::TileAxis>& axes, const ir::TileOperand& o) {
  return std::llabs(ir::flat_stride(*o.node, o.index, axes.back().symbol));
}

// A counted loop over the compile-time range [0, n), unrolled by the device compiler.
void unrolled_for(BodyPrinter& p, const std::string& v, std::int64_t n) {
  p.line("#pragma unroll");
  p.line("for (int " + v + " = 0; " + v + " < " + std::to_string(n) + "; ++" + v + ") {");
  p.indent();
}

void close_block(BodyPrinter& p) {
  p.dedent();
  p.line("}");
}

}  // namespace cannl::codegen
