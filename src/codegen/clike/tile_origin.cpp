// Operand base cells of matmul tiles (tile_origin.h).
#include "codegen/clike/tile_origin.h"

#include <algorithm>

namespace cannl::codegen {

std::vector<ir::AxisIndex> at_tile_origin(std::vector<ir::AxisIndex> index, const ir::TileMma& t) {
  const std::vector<const ir::TileAxis*> axes = t.axes();
  for (auto& at : index) {
    std::vector<ir::AffineTerm> kept;
    for (const auto& term : at.terms) {
      const auto found = std::find_if(axes.begin(), axes.end(),
                                      [&](const ir::TileAxis* x) { return x->symbol == term.symbol; });
      if (found == axes.end()) {
        kept.push_back(term);
      } else {
        at.offset += term.coeff * (*found)->begin;
      }
    }
    at.terms = std::move(kept);
  }
  return index;
}

}  // namespace cannl::codegen
