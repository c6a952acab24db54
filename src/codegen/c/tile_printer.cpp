// Matmul tiles of the C dialect: one call of the packed, register-tiled f32 sgemm kernel (simd.h)
// with each operand given as a base pointer and two element strides (or, for a folded tile,
// offset tables).
//
// The call updates each output cell in increasing k, with one fma when the tile is `fused` and a
// rounded multiply then a rounded add otherwise, exactly like the fallback: the result equals it
// bit for bit (and so does not depend on the team). The schedule's final lowering round left only
// tiles the target runs (ir::runs_as_kernel) and wrote their team and zero start.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>

#include "cannl/support/error.h"
#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/clike/tile_origin.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

namespace {

std::string base(const BodyPrinter& p, const ir::TileOperand& o, const ir::TileMma& t) {
  return p.names().node(*o.node) + " + " + atom(p.offset(*o.node, at_tile_origin(o.index, t)));
}

// The arguments after the operands: fused, zero start, team.
std::string flags(const ir::TileMma& t) {
  return std::string(t.fused ? "1" : "0") + ", " + (t.zero_start ? "1" : "0") + ", " + std::to_string(t.team);
}

// A folded tile: one call of the `_nd` driver. Rows and columns are listed by d's stride,
// largest first, so the register tiles of a convolution's output stay contiguous and store in
// place; steps keep their order (each cell's order of updates).
void print_folded_tile(BodyPrinter& p, const ir::TileMma& t, const SimdWidth& w) {
  ir::TileGroups g = ir::tile_groups(t);
  const auto by_d_stride = [&](const ir::TileAxis& x, const ir::TileAxis& y) {
    return std::abs(ir::flat_stride(*t.d.node, t.d.index, x.symbol)) > std::abs(ir::flat_stride(*t.d.node, t.d.index, y.symbol));
  };
  std::stable_sort(g.rows.begin(), g.rows.end(), by_d_stride);
  std::stable_sort(g.cols.begin(), g.cols.end(), by_d_stride);
  auto list = [](const std::vector<ir::TileAxis>& axes, auto value) {
    std::string out = "(const int64_t[]){";
    for (std::size_t x = 0; x < axes.size(); ++x) out += (x ? ", " : "") + std::to_string(value(axes[x]));
    return out + "}";
  };
  auto extents = [&](const std::vector<ir::TileAxis>& axes) {
    return list(axes, [](const ir::TileAxis& x) { return x.extent(); });
  };
  auto strides = [&](const std::vector<ir::TileAxis>& axes, const ir::TileOperand& o) {
    return list(axes, [&](const ir::TileAxis& x) { return ir::flat_stride(*o.node, o.index, x.symbol); });
  };
  auto group = [&](const std::vector<ir::TileAxis>& axes, const ir::TileOperand& u, const ir::TileOperand& v) {
    return std::to_string(axes.size()) + ", " + extents(axes) + ", " + strides(axes, u) + ", " + strides(axes, v);
  };
  p.line("/* matmul tile " + std::to_string(t.rows()) + " x " + std::to_string(t.cols()) + " x " +
         std::to_string(t.steps()) + " over " + std::to_string(g.rows.size()) + " row, " +
         std::to_string(g.cols.size()) + " column and " + std::to_string(g.steps.size()) +
         " step loops (implicit im2col; register-tiled, packed panels) */");
  p.line("cannl_check(&cannl_status, " + gemm_function(w) + "_nd(" + group(g.rows, t.d, t.a) + ",");
  p.line("    " + group(g.cols, t.d, t.b) + ",");
  p.line("    " + group(g.steps, t.a, t.b) + ",");
  p.line("    " + base(p, t.d, t) + ", " + base(p, t.a, t) + ", " + base(p, t.b, t) + ", " + flags(t) + "));");
}

}  // namespace

void CDialect::print_tile(BodyPrinter& p, const ir::TileMma& t) const {
  const ir::Target& target = p.options().target;
  internal_check(ir::runs_as_kernel(t, target), "codegen: a matmul tile the target cannot run reached the C printer");
  const SimdWidth w = simd_width(target.vector_bytes);
  if (t.zero_start) p.line("/* " + p.names().node(*t.d.node) + " starts at zero: the call sets its cells */");
  if (t.folded()) {
    print_folded_tile(p, t, w);
    return;
  }
  auto stride = [&](const ir::TileOperand& o, const ir::TileAxis& axis) {
    return std::to_string(ir::flat_stride(*o.node, o.index, axis.symbol));
  };
  p.line("/* matmul tile " + std::to_string(t.i.extent()) + " x " + std::to_string(t.j.extent()) + " x " +
         std::to_string(t.k.extent()) + " (register-tiled, packed panels) */");
  p.line("cannl_check(&cannl_status, " + gemm_function(w) + "(" + std::to_string(t.i.extent()) + ", " +
         std::to_string(t.j.extent()) + ", " + std::to_string(t.k.extent()) + ", " + base(p, t.d, t) + ", " +
         stride(t.d, t.i) + ", " + stride(t.d, t.j) + ", " + base(p, t.a, t) + ", " + stride(t.a, t.i) + ", " +
         stride(t.a, t.k) + ", " + base(p, t.b, t) + ", " + stride(t.b, t.k) + ", " + stride(t.b, t.j) + ", " +
         flags(t) + "));");
}

}  // namespace cannl::codegen
