// TileMma on the CPU: one call of the packed, register-tiled f32 matmul of the prelude
// (simd.h) with each operand given as a base pointer and two element strides.
//
// The call updates each output cell in increasing k, with one fma when the tile is `fused` and a
// rounded multiply then a rounded add otherwise, exactly like the fallback: the result equals it
// bit for bit (and so does not depend on the thread count). It declines (the fallback nest is printed)
// for anything but f32 `+=` tiles over three distinct f32 nodes, for operands whose index mixes
// the tile's loops the wrong way, and for tiles too small to repay the packing.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>

#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

namespace {

// Below this many multiply-adds the scalar nest beats packing.
constexpr std::int64_t kMinTileWork = 4096;

// `index` with the tile's symbols set to their first values: the operand's base cell.
std::vector<ir::AxisIndex> at_tile_origin(std::vector<ir::AxisIndex> index, const ir::TileMma& t) {
  const std::vector<const ir::TileAxis*> axes = t.axes();
  for (auto& at : index) {
    std::vector<ir::AffineTerm> kept;
    for (const auto& term : at.terms) {
      const auto found = std::find_if(axes.begin(), axes.end(),
                                      [&](const ir::TileAxis* x) { return x->symbol == term.symbol; });
      const ir::TileAxis* axis = found == axes.end() ? nullptr : *found;
      if (axis == nullptr) {
        kept.push_back(term);
      } else {
        at.offset += term.coeff * axis->begin;
      }
    }
    at.terms = std::move(kept);
  }
  return index;
}

// The tile's rows, columns and steps, each group's loops outermost first.
struct TileGroups {
  std::vector<ir::TileAxis> rows, cols, steps;
};
TileGroups groups_of(const ir::TileMma& t) {
  TileGroups g{t.outer_i, t.outer_j, t.outer_k};
  g.rows.push_back(t.i);
  g.cols.push_back(t.j);
  g.steps.push_back(t.k);
  return g;
}

bool renderable(const ir::TileMma& t) {
  const auto f32 = [](const ir::TileOperand& o) { return o.node->dtype == ir::DType::F32; };
  if (t.dtype != ir::DType::F32 || t.accum != ir::Op::Add || !f32(t.d) || !f32(t.a) || !f32(t.b)) {
    return false;
  }
  if (t.d.node->id == t.a.node->id || t.d.node->id == t.b.node->id) return false;
  if (t.rows() * t.cols() * t.steps() < kMinTileWork) return false;
  // d[i, j], a[i, k], b[k, j]: an operand must not move along the loops it is broadcast over.
  const TileGroups g = groups_of(t);
  const auto still = [](const ir::TileOperand& o, const std::vector<ir::TileAxis>& axes) {
    return std::all_of(axes.begin(), axes.end(),
                       [&](const ir::TileAxis& x) { return ir::flat_stride(*o.node, o.index, x.symbol) == 0; });
  };
  return still(t.d, g.steps) && still(t.a, g.cols) && still(t.b, g.rows);
}

// `index` with the axis `c*g + i` (c = the tile's row count) rewritten to `i + c*begin`, when
// that is the only mention of `g`; false otherwise.
bool merge_rows(std::vector<ir::AxisIndex>& index, ir::Symbol g, const ir::TileMma& t, std::int64_t begin) {
  int merged = 0;
  for (auto& at : index) {
    if (!at.mentions(g)) continue;
    const bool rows = at.terms.size() == 2 && at.mentions(t.i.symbol);
    if (!rows) return false;
    const auto& tg = at.terms[0].symbol == g ? at.terms[0] : at.terms[1];
    const auto& ti = at.terms[0].symbol == g ? at.terms[1] : at.terms[0];
    if (tg.coeff != t.i.extent() || ti.coeff != 1) return false;
    at.terms = {ti};
    at.offset += tg.coeff * begin;
    ++merged;
  }
  return merged == 1;
}

}  // namespace

std::optional<ir::TileMma> merge_grid_rows(const ir::For& grid, const ir::TileMma& t) {
  if (t.i.begin != 0 || t.b.index.empty() || t.folded()) return std::nullopt;
  for (const auto& at : t.b.index) {
    if (at.mentions(grid.index)) return std::nullopt;
  }
  ir::TileMma whole = t;
  if (!merge_rows(whole.d.index, grid.index, t, grid.begin) ||
      !merge_rows(whole.a.index, grid.index, t, grid.begin)) {
    return std::nullopt;
  }
  whole.i.end = t.i.extent() * (grid.end - grid.begin);
  whole.fallback = nullptr;  // printed only by print_tile_mma, which never declines to it
  return whole;
}

bool BodyPrinter::print_tile_mma(const ir::TileMma& t, bool zero) {
  if (options_.vector_bytes <= 0 || !renderable(t)) return false;
  const SimdWidth w = simd_width(options_.vector_bytes);
  auto base = [&](const ir::TileOperand& o) {
    return names_.node(*o.node) + " + " + atom(offset(*o.node, at_tile_origin(o.index, t)));
  };
  auto stride = [&](const ir::TileOperand& o, const ir::TileAxis& axis) {
    return std::to_string(ir::flat_stride(*o.node, o.index, axis.symbol));
  };
  // Inside a parallel Grid chunk the call runs serially: no nested teams.
  const int threads = in_parallel_ || !options_.openmp_grid ? 1 : options_.threads;
  if (t.folded()) {
    print_folded_tile(t, w, zero, threads);
    return true;
  }
  line("/* matmul tile " + std::to_string(t.i.extent()) + " x " + std::to_string(t.j.extent()) +
       " x " + std::to_string(t.k.extent()) + " (register-tiled, packed panels) */");
  line(gemm_function(w) + "(" + std::to_string(t.i.extent()) + ", " + std::to_string(t.j.extent()) +
       ", " + std::to_string(t.k.extent()) + ", " + base(t.d) + ", " + stride(t.d, t.i) + ", " +
       stride(t.d, t.j) + ", " + base(t.a) + ", " + stride(t.a, t.i) + ", " + stride(t.a, t.k) +
       ", " + base(t.b) + ", " + stride(t.b, t.k) + ", " + stride(t.b, t.j) + ", " +
       (t.fused ? "1" : "0") + ", " + (zero ? "1" : "0") + ", " + std::to_string(threads) + ");");
  return true;
}

// A folded tile: one call of the `_nd` driver. Rows and columns are listed by d's stride,
// largest first, so the register tiles of a convolution's output stay contiguous and store in
// place; steps keep their order (each cell's order of updates).
void BodyPrinter::print_folded_tile(const ir::TileMma& t, const SimdWidth& w, bool zero, int threads) {
  TileGroups g = groups_of(t);
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
  auto base = [&](const ir::TileOperand& o) {
    return names_.node(*o.node) + " + " + atom(offset(*o.node, at_tile_origin(o.index, t)));
  };
  line("/* matmul tile " + std::to_string(t.rows()) + " x " + std::to_string(t.cols()) + " x " +
       std::to_string(t.steps()) + " over " + std::to_string(g.rows.size()) + " row, " +
       std::to_string(g.cols.size()) + " column and " + std::to_string(g.steps.size()) +
       " step loops (implicit im2col; register-tiled, packed panels) */");
  line(gemm_function(w) + "_nd(" + group(g.rows, t.d, t.a) + ",");
  line("    " + group(g.cols, t.d, t.b) + ",");
  line("    " + group(g.steps, t.a, t.b) + ",");
  line("    " + base(t.d) + ", " + base(t.a) + ", " + base(t.b) + ", " + (t.fused ? "1" : "0") + ", " +
       (zero ? "1" : "0") + ", " + std::to_string(threads) + ");");
}

namespace {

// Whether the rendered call writes every cell of d exactly once: as many distinct cells as d
// has (every access of the fallback is in bounds, so they are all of d's).
bool covers_output(const ir::TileMma& t) {
  const TileGroups g = groups_of(t);
  std::vector<ir::TileAxis> cells = g.rows;
  cells.insert(cells.end(), g.cols.begin(), g.cols.end());
  return t.rows() * t.cols() == t.d.node->num_elements() && ir::distinct_cells(*t.d.node, t.d.index, cells);
}

// The one call `s` renders as, when it is a tile or a Grid loop merging into one.
std::optional<ir::TileMma> whole_tile(const ir::StmtRef& s) {
  if (const auto* t = std::get_if<ir::TileMma>(&s->node)) return *t;
  if (const auto* f = std::get_if<ir::For>(&s->node); f && f->axis == ir::AxisType::Grid)
    if (const auto* t = std::get_if<ir::TileMma>(&f->body->node)) return merge_grid_rows(*f, *t);
  return std::nullopt;
}

const ir::TileMma* tile_in(const ir::StmtRef& s) {
  if (const auto* t = std::get_if<ir::TileMma>(&s->node)) return t;
  if (const auto* f = std::get_if<ir::For>(&s->node)) return std::get_if<ir::TileMma>(&f->body->node);
  return nullptr;
}

}  // namespace

void BodyPrinter::plan_zero_tiles(const ir::StmtRef& body) {
  if (options_.vector_bytes <= 0) return;
  std::vector<const ir::Seq*> seqs;
  const std::function<void(const ir::StmtRef&)> walk = [&](const ir::StmtRef& s) {
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      seqs.push_back(q);
      for (const auto& x : q->stmts) walk(x);
    } else if (const auto* f = std::get_if<ir::For>(&s->node)) {
      walk(f->body);
    }
  };
  walk(body);
  for (const ir::Seq* q : seqs) {
    for (std::size_t k = 0; k + 1 < q->stmts.size(); ++k) {
      const auto* zero = std::get_if<ir::ZeroOut>(&q->stmts[k]->node);
      if (!zero) continue;
      const auto whole = whole_tile(q->stmts[k + 1]);
      if (!whole || whole->d.node != zero->node || !renderable(*whole) || !covers_output(*whole)) continue;
      zeroed_by_tile_.insert(q->stmts[k].get());
      zero_tiles_.insert(tile_in(q->stmts[k + 1]));
    }
  }
}

}  // namespace cannl::codegen
