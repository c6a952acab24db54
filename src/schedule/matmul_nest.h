#pragma once
// Matmul-like nests beyond the plain three-loop matmul: convolutions (forward and weight
// gradient), fully connected weight gradients over flattened features, batched contractions. A
// perfect serial nest around one update d[cell] += a * b (or its fma form) is a matmul once its
// loops are sorted by role:
//   cell loops    appear in d's index (I: also in a only, J: also in b only, or elsewhere);
//   reduction (K) loops do not appear in d's index.
// The plan reorders the nest (adjacent Swaps) into [cell loops kept outside] [K loops kept
// outside] [folded cell loops] [folded K loops] [i j k] and tensorizes i, j, k folding the
// loops between (Tensorize::fold: the tile absorbs them as more rows, columns and steps, an
// implicit im2col): k is the innermost K loop and folded steps keep nest order, so each cell
// still receives its updates in the original order and the result is bitwise the original
// nest's. The plan is made only when d's index is injective over the cell loops (each cell
// belongs to one cell-loop iteration) and K loops never pass each other; the folded cells keep
// d injective over the tile, and the cost model judges the folded extents.
// With `reassociate` (config cpu_schedule_reassociate) the reduction order may change: k is the
// widest reduction loop, and d's index need only be injective over the tile's i and j (the
// gradient of a convolution's input, d[oh + kh, ..], qualifies).
//
//   if (auto plan = plan_matmul_nest(top, 4096, true, ir::cpu_target(64))) { for (auto& s : plan->swaps) r = apply(r, s); r = apply(r, plan->tile); }

#include <cstdint>
#include <optional>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

struct MatmulNestPlan {
  std::vector<Swap> swaps;  // applied in order, they bring i, j, k innermost
  Tensorize tile;
};

/// The plan for the perfect nest rooted at `top`, or nullopt when it is not a matmul-like nest,
/// when i * j * k would be below `min_tile_work`, when the target's micro-kernel would not repay
/// its packing (a cost model over the kernel's register tile), or when its three innermost loops
/// already form the tile (nothing to reorder).
std::optional<MatmulNestPlan> plan_matmul_nest(const ir::For& top, std::int64_t min_tile_work,
                                               bool reassociate, const ir::Target& target);

/// For a matmul-like nest under `top` whose store several cell iterations share (a
/// convolution's input gradient, d[oh + kh, ..]): the StagePartials keeping every loop d's index
/// mentions, after which the first nest tiles with all its cells folded. nullopt when d is
/// injective, the nest is not matmul-like, the partials would exceed `max_cells`, or each
/// partial would sum fewer than `min_steps` updates (the extra pass over p would not pay).
std::optional<StagePartials> plan_shared_store(const ir::For& top, std::int64_t min_steps, std::int64_t max_cells);

/// For a matmul-like nest under `top` with few cells (at most `max_cells`) and a long reduction
/// (at least `min_steps` steps per cell), such as a first convolution's weight gradient: split its
/// outermost reduction loop into `partials` blocks and stage the partials keeping the block loop,
/// so the blocks can run in parallel and are added in order after. The count is fixed, not the
/// thread count, so the result does not depend on the machine. nullopt when it does not apply.
struct SplitPartialsPlan {
  Split split;
  StagePartials partials;
};
std::optional<SplitPartialsPlan> plan_split_partials(const ir::For& top, std::int64_t max_cells, std::int64_t min_steps,
                                                     std::int64_t partials);

}  // namespace cannl::schedule::detail
