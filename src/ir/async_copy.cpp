// Which asynchronous copies a pipelined tile's staging may use (target.h: async_copy_elements).
// A 16-byte cp.async needs a 16-byte aligned global and shared address: proven here from the
// operand's static strides and offsets, never assumed, since a misaligned one faults on the
// device (or, on a device that tolerates it, copies other cells).
#include <algorithm>

#include "cannl/ir/target.h"

namespace cannl::ir {

namespace {

constexpr std::int64_t kChunk = 4;  // f32 cells of a 16-byte copy

bool is_tile_symbol(const TileMma& t, Symbol s) {
  const std::vector<const TileAxis*> axes = t.axes();
  return std::any_of(axes.begin(), axes.end(), [&](const TileAxis* x) { return x->symbol == s; });
}

// Whether `o`'s offset at the tile's origin (its loops at their first values) is a multiple of
// kChunk for every value of the loops and statics around the tile.
bool origin_aligned(const TileMma& t, const TileOperand& o) {
  const TensorNode& node = *o.node;
  std::int64_t constant = 0, axis_stride = 1;
  for (std::size_t ax = o.index.size(); ax-- > 0;) {
    const AxisIndex& at = o.index[ax];
    constant += at.offset * axis_stride;
    for (const AffineTerm& term : at.terms) {
      if (!is_tile_symbol(t, term.symbol)) {
        if ((term.coeff * axis_stride) % kChunk != 0) return false;
        continue;
      }
      const auto axes = t.axes();
      const auto x = std::find_if(axes.begin(), axes.end(), [&](const TileAxis* a) { return a->symbol == term.symbol; });
      constant += term.coeff * (*x)->begin * axis_stride;
    }
    axis_stride *= node.dims[ax];
  }
  return constant % kChunk == 0;
}

}  // namespace

int async_copy_elements(const TileMma& t, const TileOperand& o, const std::vector<TileAxis>& run,
                        const std::vector<TileAxis>& across) {
  if (o.node->dtype != DType::F32 || run.empty() || !origin_aligned(t, o)) return 1;
  const TileAxis& fastest = run.back();
  if (flat_stride(*o.node, o.index, fastest.symbol) != 1 || fastest.extent() % kChunk != 0) return 1;
  const auto aligned = [&](const TileAxis& x) {
    return x.extent() == 1 || flat_stride(*o.node, o.index, x.symbol) % kChunk == 0;
  };
  if (!std::all_of(run.begin(), run.end() - 1, aligned) || !std::all_of(across.begin(), across.end(), aligned)) return 1;
  return static_cast<int>(kChunk);
}

}  // namespace cannl::ir
