#pragma once
// Windowed reductions (pooling, and any accumulation whose short reduction loops the lowering
// puts innermost): for b, oh, ow, c: for kh, kw: d[b, oh, ow, c] = max(d[..], x[b, 2oh + kh, ..]).
// Every step of the window reads and writes d's cell through memory: a chain of store-to-load
// forwards per cell. Privatizing the cell over the window loops keeps it in a register, and the
// cells, independent of each other, pipeline; bitwise (the local rounds like the node). The
// gain on LeNet's max pool: benchmarks/reports/schedule-decisions.md.
//
//   if (auto p = plan_window_privatize(top, 64)) r = apply(r, *p);
//   if (auto g = plan_gather_windows(r, top)) r = apply(r, *g);

#include <cstdint>
#include <optional>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

/// The Privatize of the store's cell over the outermost of the trailing reduction loops (loops
/// the store's index does not mention) of the perfect nest under `top`, when they follow cell
/// loops, number at most `max_window` iterations together, and the store is a recognized
/// accumulation (add, mul, max, min) into its own cell; nullopt otherwise (longer reductions are left to the interleaved Split_reduce).
std::optional<Privatize> plan_window_privatize(const ir::For& top, std::int64_t max_window);

/// Scatters over sliding windows (a stride-1 convolution's input gradient:
/// d[b, oh + kh, ow + kw, c] += g[b, oh, ow, f] * w[f, kh, kw, c]) as the transposed
/// convolution: the GatherWindows of every pair (cell loop, window loop) summed with
/// coefficient 1 in an axis of d, the cell loop read by the other operand alone. Only when the
/// zero border grows the nest's iterations at most `max_growth` times and, with `must_tile`, the
/// gathered nest then tiles (plan_matmul_nest with the re-association licence, `min_tile_work`,
/// `target`'s cost model); nullopt otherwise. (A GPU gathers without the tile too: every cell
/// of d is then a thread of its own.)
std::optional<GatherWindows> plan_gather_windows(const ir::LoweredRoutine& r, const ir::For& top, double max_growth,
                                                 std::int64_t min_tile_work, const ir::Target& target,
                                                 bool must_tile = true);

/// The staged form of the same scatters (when the gather does not pay): the loop that d's
/// innermost axis indexes alone (the input channels) moved innermost by adjacent Swaps, then the
/// StagePartials keeping every loop d's index mentions, so the partials p[b, oh, ow, kh, kw, c]
/// run contiguously along the channels: the tile's columns are one contiguous run and the
/// scatter into d vectorizes. nullopt when the nest has no such loop, is not a shared store, or
/// the partials would exceed `max_cells` or sum fewer than `min_steps` updates each.
/// When all the partials exceed `cache_cells` but one iteration's of the outermost loop (the
/// batch, an axis of d of its own) fit, they are staged per iteration of it instead: the batch
/// split into at most `chunks` blocks (a divisor), p[block, oh, ow, kh, kw, c] filled and added
/// into d inside the batch loop, read back from cache; the blocks are independent.
std::optional<std::vector<Transform>> plan_staged_windows(const ir::For& top, std::int64_t min_steps,
                                                          std::int64_t max_cells, std::int64_t cache_cells,
                                                          std::int64_t chunks);

}  // namespace cannl::schedule::detail
