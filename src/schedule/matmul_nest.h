#pragma once
// Matmul-like nests beyond the plain three-loop matmul: convolutions (forward and weight
// gradient), fully connected weight gradients over flattened features, batched contractions. A
// perfect serial nest around one update d[cell] += a * b (or its fma form) is a matmul once its
// loops are sorted by role:
//   cell loops    appear in d's index (I: also in a only, J: also in b only, or elsewhere);
//   reduction (K) loops do not appear in d's index.
// The plan reorders the nest (adjacent Swaps) into [cell loops not tiled] [K loops not tiled]
// [i j k] and tensorizes i, j, k: k is the innermost K loop, so each cell still receives its
// updates in the original order and the result is bitwise the original nest's. The plan is made
// only when d's index is injective over the cell loops (each cell belongs to one cell-loop
// iteration) and K loops never pass each other.
// With `reassociate` (config cpu_schedule_reassociate) the reduction order may change: k is the
// widest reduction loop, and d's index need only be injective over the tile's i and j (the
// gradient of a convolution's input, d[oh + kh, ..], qualifies).
//
//   if (auto plan = plan_matmul_nest(top, 4096)) { for (auto& s : plan->swaps) r = apply(r, s); r = apply(r, plan->tile); }

#include <cstdint>
#include <optional>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

struct MatmulNestPlan {
  std::vector<Swap> swaps;  // applied in order, they bring i, j, k innermost
  Tensorize tile;
};

/// The plan for the perfect nest rooted at `top`, or nullopt when it is not a matmul-like nest,
/// when i * j * k would be below `min_tile_work`, or when its three innermost loops already form
/// the tile (nothing to reorder).
std::optional<MatmulNestPlan> plan_matmul_nest(const ir::For& top, std::int64_t min_tile_work,
                                               bool reassociate);

}  // namespace cannl::schedule::detail
