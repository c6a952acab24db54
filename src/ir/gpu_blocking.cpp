// GPU matmul tiles in the target record (target.h): which tiles a GPU runs staged and blocked
// (on tensor cores where their operands allow), the default blockings for a device's limits and
// the blockings fitted to one tile.
#include <algorithm>

#include "cannl/ir/target.h"

namespace cannl::ir {

namespace {

// The default blocking before the device's limits: 64 x 64 cells per workgroup, 16-step slices,
// 4 x 4 cells per thread (256 threads, 16 accumulators each).
constexpr TileBlocking kLargestDefault{64, 64, 16, 4, 4};
// The default tensor-core blocking: 128 x 128 cells per workgroup in 32-step slices, 64 x 32
// cells per warp (8 warps, 4 x 4 MMA tiles of 16 x 8 each, 64 accumulators per lane).
constexpr TileBlocking kLargestMmaDefault{128, 128, 32, 64, 32};

bool fits(const TileBlocking& b, const GpuLimits& limits) { return fits_device(b, limits); }

// `extent` (bm or bn) and `per_thread` (tm or tn) halved while half the extent still covers
// `cells`: first the block alone (down to one register tile per thread), then both together.
void fit_side(int& extent, int& per_thread, std::int64_t cells) {
  while (extent / 2 >= cells && extent / 2 >= per_thread && (extent / 2) % per_thread == 0) extent /= 2;
  while (extent / 2 >= cells && extent % 2 == 0 && per_thread % 2 == 0) {
    extent /= 2;
    per_thread /= 2;
  }
}

// fit_side for a tensor-core tile: whole 16-cell MMA tiles per warp (pairs of 8-column ones).
void fit_mma_side(int& extent, int& per_warp, std::int64_t cells) {
  while (extent / 2 >= cells && extent / 2 >= per_warp && (extent / 2) % per_warp == 0) extent /= 2;
  while (extent / 2 >= cells && extent % 2 == 0 && per_warp / 2 >= 16 && (per_warp / 2) % 16 == 0) {
    extent /= 2;
    per_warp /= 2;
  }
}

}  // namespace

bool runs_as_gpu_tile(const TileMma& t, const Target& target) {
  // Each thread loads and stores its own cells of d once; the staged slices hold one row of a and
  // one column of b per tile row and column.
  return target.workgroups && target.gpu.max_threads_per_block > 0 && target.gpu_tile.valid() &&
         is_f32_matmul_tile(t, target);
}

TileBlocking fitted_blocking(const TileBlocking& largest, std::int64_t rows, std::int64_t cols, std::int64_t steps) {
  TileBlocking b = largest;
  if (!b.valid()) return b;
  fit_side(b.bm, b.tm, rows);
  fit_side(b.bn, b.tn, cols);
  while (b.bk / 2 >= steps && b.bk > 1) b.bk /= 2;
  return b;
}

namespace {

/// Fewer threads per block than this leave a block too little to hide latency with.
constexpr std::int64_t kMinFillThreads = 64;

std::int64_t blocks_of(const TileBlocking& b, std::int64_t rows, std::int64_t cols) {
  return ((rows + b.bm - 1) / b.bm) * ((cols + b.bn - 1) / b.bn);
}

// One side of `b` halved (fewer threads while the block keeps kMinFillThreads, else fewer cells
// per thread); false when the side cannot shrink.
bool halve(int& extent, int& per_thread, std::int64_t threads) {
  if (threads / 2 >= kMinFillThreads && extent / 2 >= per_thread && (extent / 2) % per_thread == 0) {
    extent /= 2;
    return true;
  }
  if (extent % 2 == 0 && per_thread % 2 == 0) {
    extent /= 2;
    per_thread /= 2;
    return true;
  }
  return false;
}

}  // namespace

TileBlocking blocking_for_tile(const Target& target, std::int64_t rows, std::int64_t cols, std::int64_t steps) {
  TileBlocking b = fitted_blocking(target.gpu_tile, rows, cols, steps);
  if (!b.valid()) return b;
  while (blocks_of(b, rows, cols) < target.gpu.compute_units) {
    // The side with more cells per block first; a side that covers its cells already stays.
    const bool rows_first = b.bm >= b.bn;
    const bool rows_can = b.bm < 2 * rows, cols_can = b.bn < 2 * cols;
    if (rows_first && rows_can && halve(b.bm, b.tm, b.threads())) continue;
    if (cols_can && halve(b.bn, b.tn, b.threads())) continue;
    if (!rows_first && rows_can && halve(b.bm, b.tm, b.threads())) continue;
    break;
  }
  return b;
}

NarrowFormat tensor_core_format(const TileMma& t, const Target& target) {
  const NarrowFormat f = t.a.node->rounded_to;
  if (f == NarrowFormat::None || t.b.node->rounded_to != f || t.accum != Op::Add || !runs_as_gpu_tile(t, target))
    return NarrowFormat::None;
  const auto& formats = target.gpu_mma_formats;
  const bool multiplies = std::find(formats.begin(), formats.end(), f) != formats.end();
  return multiplies && target.gpu.warp_size == TileBlocking::kWarpLanes ? f : NarrowFormat::None;
}

TileBlocking fitted_mma_blocking(const TileBlocking& largest, NarrowFormat format, std::int64_t rows,
                                 std::int64_t cols, std::int64_t steps) {
  TileBlocking b = largest;
  b.mma = format;
  if (!b.valid()) return b;
  fit_mma_side(b.bm, b.tm, rows);
  fit_mma_side(b.bn, b.tn, cols);
  while (b.bk / 2 >= steps && b.bk / 2 >= b.mma_steps() && (b.bk / 2) % b.mma_steps() == 0) b.bk /= 2;
  return b;
}

TileBlocking default_mma_blocking(const GpuLimits& limits) {
  TileBlocking b = kLargestMmaDefault;
  b.mma = NarrowFormat::TF32;  // the widest staged elements
  while (!fits(b, limits)) {
    if (b.bm == b.tm && b.bn == b.tn) {
      if (b.tm == 16 && b.tn == 16) return {};
      // Smaller warp tiles: more warps share a block of the same cells.
      int& per_warp = b.tm >= b.tn ? b.tm : b.tn;
      per_warp /= 2;
      continue;
    }
    int& side = b.bm / b.tm >= b.bn / b.tn ? b.bm : b.bn;
    side /= 2;
  }
  b.mma = NarrowFormat::None;
  return b;
}

bool fits_device(const TileBlocking& b, const GpuLimits& limits) {
  const auto below = [](std::int64_t value, std::int64_t limit) { return limit <= 0 || value <= limit; };
  return below(b.threads(), limits.max_threads_per_block) && below(b.threads(), limits.max_block_dims[0]) &&
         below(b.shared_bytes(4), limits.max_shared_bytes);
}

TileBlocking pipelined_blocking(TileBlocking b, const Target& target) {
  b.async_copy = target.gpu_async_copy && b.blocked() && b.copies_unconverted();
  if (b.async_copy && !fits_device(b, target.gpu)) b.async_copy = false;
  return b;
}

TileBlocking default_gpu_blocking(const GpuLimits& limits) {
  TileBlocking b = kLargestDefault;
  while (!fits(b, limits)) {
    if (b.bm == b.tm && b.bn == b.tn) return {};
    // The longer side first (both square here), keeping whole register tiles.
    int& side = b.bm / b.tm >= b.bn / b.tn ? b.bm : b.bn;
    side /= 2;
  }
  return b;
}

}  // namespace cannl::ir
