// Planning matmul-like nests (see matmul_nest.h).
#include "schedule/matmul_nest.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <set>

#include "schedule/loop_tree.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// Each axis of the store's index holds at most one loop symbol and no symbol repeats: distinct
// values of the loops it mentions address distinct cells.
bool injective(const std::vector<ir::AxisIndex>& index) {
  std::set<ir::Symbol> seen;
  for (const auto& axis : index) {
    if (axis.terms.size() > 1) return false;
    for (const auto& term : axis.terms)
      if (term.coeff == 0 || !seen.insert(term.symbol).second) return false;
  }
  return true;
}

std::int64_t extent(const ir::For& f) { return f.end - f.begin; }
ir::TileAxis axis_of(const ir::For& f) { return {f.index, f.begin, f.end}; }

// The loop among `candidates` with the largest extent (nullptr when there is none).
const ir::For* widest(const std::vector<const ir::For*>& candidates) {
  const ir::For* best = nullptr;
  for (const ir::For* f : candidates)
    if (!best || extent(*f) > extent(*best)) best = f;
  return best;
}

// Adjacent swaps that sort `order` by `rank` (a stable bubble sort: loops of equal rank never
// pass each other).
std::vector<Swap> swaps_sorting(std::vector<const ir::For*> order, const std::vector<int>& rank_of_position) {
  std::vector<int> rank = rank_of_position;
  std::vector<Swap> swaps;
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t p = 0; p + 1 < order.size(); ++p) {
      if (rank[p] <= rank[p + 1]) continue;
      swaps.push_back(Swap{order[p]->index, order[p + 1]->index});
      std::swap(order[p], order[p + 1]);
      std::swap(rank[p], rank[p + 1]);
      moved = true;
    }
  }
  return swaps;
}

// Whether one tile of i x j x k beats the plain nest, in estimated cycles, for the target's
// register-tiled micro-kernel (its mr x nr tile; 12 x 32 with AVX-512). The
// tile pays per call for packing both operands into zero-padded panels (scalar strided copies),
// for the peeled edge tiles (a padded copy in and out), and a fixed setup; it computes at about
// two vector FMAs per cycle. The plain nest takes about 1.5 cycles per multiply-add. Skinny tiles
// (3 or 6 columns of 32, k of a few steps) lose to the plain nest on LeNet's convolution
// gradients. The measurements: benchmarks/reports/schedule-decisions.md.
bool tile_pays(std::int64_t m, std::int64_t n, std::int64_t k, const ir::Target& target) {
  const std::int64_t kMr = target.gemm.mr, kNr = target.gemm.nr(target.vector_lanes());
  if (kMr <= 0 || kNr <= 0) return false;
  const std::int64_t row_panels = (m + kMr - 1) / kMr, col_panels = (n + kNr - 1) / kNr;
  const std::int64_t edge_panels = row_panels * col_panels - (m / kMr) * (n / kNr);
  const double packing = 1.5 * static_cast<double>((row_panels * kMr + col_panels * kNr) * k);
  const double compute = 12.0 * static_cast<double>(row_panels * col_panels * k);
  const double tile = packing + compute + 500.0 * static_cast<double>(edge_panels) + 300.0;
  const double plain = 1.5 * static_cast<double>(m * n * k);
  return tile < 0.6 * plain;
}

// The loops the tile can absorb besides i, j, k (TileMma's fold): every reduction in both
// operands after the last one that is not (so each cell's steps keep their nest order), and the
// row and column loops, widest first, while d stays injective over the tile's cells.
template <typename InBoth>
std::vector<const ir::For*> foldable(const std::vector<const ir::For*>& loops, const ir::Set& store,
                                     std::initializer_list<const ir::For*> tile,
                                     const std::vector<const ir::For*>& rows, const std::vector<const ir::For*>& cols,
                                     const std::vector<const ir::For*>& reductions, InBoth in_both) {
  const std::vector<const ir::For*> ijk(tile);
  auto in_tile = [&](const ir::For* f) { return std::find(ijk.begin(), ijk.end(), f) != ijk.end(); };
  std::vector<const ir::For*> fold;
  for (const ir::For* f : reductions) {
    if (!in_both(f)) fold.clear();
    else if (!in_tile(f)) fold.push_back(f);
  }
  std::vector<const ir::For*> cells;
  for (const ir::For* f : loops)
    if (!in_tile(f) && (std::find(rows.begin(), rows.end(), f) != rows.end() ||
                        std::find(cols.begin(), cols.end(), f) != cols.end()))
      cells.push_back(f);
  std::stable_sort(cells.begin(), cells.end(), [](const ir::For* x, const ir::For* y) { return extent(*x) > extent(*y); });
  std::vector<ir::TileAxis> taken = {axis_of(*ijk[0]), axis_of(*ijk[1])};
  for (const ir::For* f : cells) {
    taken.push_back(axis_of(*f));
    if (ir::distinct_cells(*store.node, store.index, taken)) fold.push_back(f);
    else taken.pop_back();
  }
  return fold;
}

// A tile's fold and its rows, columns and steps (folded loops counted on the side of the tile
// axis that plays their role).
struct Shape {
  std::vector<const ir::For*> fold;
  std::int64_t m = 1, n = 1, depth = 1, work = 1;
};

template <typename InBoth>
Shape tile_shape(const std::vector<const ir::For*>& loops, const ir::Set& store,
                 std::initializer_list<const ir::For*> tile, const std::vector<const ir::For*>& rows,
                 const std::vector<const ir::For*>& cols, const std::vector<const ir::For*>& reductions, InBoth in_both) {
  const std::vector<const ir::For*> ijk(tile);
  Shape s{foldable(loops, store, tile, rows, cols, reductions, in_both)};
  const bool i_in_rows = std::find(rows.begin(), rows.end(), ijk[0]) != rows.end();
  s.m = extent(*ijk[0]);
  s.n = extent(*ijk[1]);
  s.depth = extent(*ijk[2]);
  for (const ir::For* f : s.fold) {
    const bool is_row = std::find(rows.begin(), rows.end(), f) != rows.end();
    const bool is_col = std::find(cols.begin(), cols.end(), f) != cols.end();
    (is_row ? (i_in_rows ? s.m : s.n) : is_col ? (i_in_rows ? s.n : s.m) : s.depth) *= extent(*f);
  }
  s.work = s.m * s.n * s.depth;
  return s;
}

// The share of the register tiles' cells that hold cells of d (edges pad the last panels).
double panel_fill(const Shape& s, const ir::Target& target) {
  const std::int64_t mr = target.gemm.mr, nr = target.gemm.nr(target.vector_lanes());
  if (mr <= 0 || nr <= 0) return 1.0;
  const double padded = static_cast<double>((s.m + mr - 1) / mr * mr) * static_cast<double>((s.n + nr - 1) / nr * nr);
  return static_cast<double>(s.m * s.n) / padded;
}

// Swapped tiles: the reduction at least this long (a few k-blocks of the kernel), and the
// register tiles at least this much fuller.
constexpr std::int64_t kMinSwappedDepth = 4096;
constexpr double kSwapGain = 1.15;

}  // namespace

std::optional<MatmulNestPlan> plan_matmul_nest(const ir::For& top, std::int64_t min_tile_work,
                                               bool reassociate, const ir::Target& target) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest || !(reassociate || injective(nest->store->index))) return std::nullopt;
  const auto& loops = nest->loops;
  const ir::Set* store = nest->store;
  const auto update = parse_matmul_update(*store);
  if (!update) return std::nullopt;

  // Roles. K: not in d. I: in d and a only. J: in d and b only. Other cell loops stay outside.
  std::vector<const ir::For*> rows, cols, reductions;
  for (const ir::For* f : loops) {
    const bool in_d = ir::mentions(store->index, f->index), in_a = ir::mentions(update->a->index, f->index),
               in_b = ir::mentions(update->b->index, f->index);
    if (!in_d) reductions.push_back(f);
    else if (in_a && !in_b) rows.push_back(f);
    else if (in_b && !in_a) cols.push_back(f);
  }
  if (reductions.empty() || rows.empty() || cols.empty()) return std::nullopt;
  auto in_both = [&](const ir::For* f) {
    return ir::mentions(update->a->index, f->index) && ir::mentions(update->b->index, f->index);
  };
  const ir::For* k = reductions.back();
  if (reassociate) {
    std::vector<const ir::For*> shared;
    std::copy_if(reductions.begin(), reductions.end(), std::back_inserter(shared), in_both);
    k = widest(shared);
  }
  if (!k || !in_both(k)) return std::nullopt;

  // The tile's columns run along d's unit stride (the micro-kernel's vector direction).
  auto unit = [&](const std::vector<const ir::For*>& fs) {
    std::vector<const ir::For*> out;
    for (const ir::For* f : fs)
      if (ir::flat_stride(*store->node, store->index, f->index) == 1) out.push_back(f);
    return out;
  };
  const ir::For* j = widest(unit(cols));
  const ir::For* i = widest(rows);
  if (!j && !unit(rows).empty()) {
    j = widest(unit(rows));
    i = widest(cols);
  }
  if (!j) j = widest(cols);
  if (!ir::distinct_cells(*store->node, store->index, {axis_of(*i), axis_of(*j)})) return std::nullopt;

  Shape shape = tile_shape(loops, *store, {i, j, k}, rows, cols, reductions, in_both);
  // A long reduction into a few cells (a first convolution's weight gradient: 32 output
  // channels by 75 taps) may fill the register tiles better the other way round, d's unit
  // stride along the tile's rows: its stores then go through the edge path, paid once per
  // k-block, which a long reduction repays.
  const ir::For* i2 = j;
  const ir::For* j2 = i;
  if (shape.depth >= kMinSwappedDepth && ir::distinct_cells(*store->node, store->index, {axis_of(*i2), axis_of(*j2)})) {
    Shape swapped = tile_shape(loops, *store, {i2, j2, k}, rows, cols, reductions, in_both);
    if (swapped.work == shape.work && panel_fill(swapped, target) > kSwapGain * panel_fill(shape, target)) {
      i = i2;
      j = j2;
      shape = std::move(swapped);
    }
  }
  const std::vector<const ir::For*>& fold = shape.fold;
  if (shape.work < min_tile_work || !tile_pays(shape.m, shape.n, shape.depth, target)) return std::nullopt;

  // Target order: cell loops kept outside, reductions kept outside, folded cells, folded
  // reductions (each group in nest order), then i, j, k.
  auto folded = [&](const ir::For* f) { return std::find(fold.begin(), fold.end(), f) != fold.end(); };
  std::vector<int> rank;
  for (const ir::For* f : loops) {
    const bool is_reduction = std::find(reductions.begin(), reductions.end(), f) != reductions.end();
    rank.push_back(f == i ? 4 : f == j ? 5 : f == k ? 6 : (is_reduction ? 1 : 0) + (folded(f) ? 2 : 0));
  }
  MatmulNestPlan plan{swaps_sorting(loops, rank), Tensorize{i->index, j->index, k->index}};
  // The fold, in the order of the sorted nest.
  for (const int group : {2, 3})
    for (std::size_t p = 0; p < loops.size(); ++p)
      if (rank[p] == group) plan.tile.fold.push_back(loops[p]->index);
  // Nothing to fold and i, j, k already innermost (in any order): the plain matmul path's.
  const std::vector<const ir::For*> innermost(loops.end() - 3, loops.end());
  const auto among_innermost = [&](const ir::For* f) { return std::find(innermost.begin(), innermost.end(), f) != innermost.end(); };
  if (plan.tile.fold.empty() && among_innermost(i) && among_innermost(j) && among_innermost(k)) return std::nullopt;
  return plan;
}

std::optional<StagePartials> plan_shared_store(const ir::For& top, std::int64_t min_steps, std::int64_t max_cells) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest || injective(nest->store->index) || !parse_matmul_update(*nest->store)) return std::nullopt;
  const auto& loops = nest->loops;
  const ir::Set* store = nest->store;
  StagePartials plan{top.index, {}};
  std::int64_t cells = 1, work = 1;
  for (const ir::For* f : loops) {
    work *= extent(*f);
    if (!ir::mentions(store->index, f->index)) continue;
    plan.keep.push_back(f->index);
    cells *= extent(*f);
  }
  if (cells > max_cells || work < min_steps * cells) return std::nullopt;
  return with_scatter_loops(std::move(plan));
}

std::optional<SplitPartialsPlan> plan_split_partials(const ir::For& top, std::int64_t max_cells, std::int64_t min_steps,
                                                     std::int64_t partials) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest || !injective(nest->store->index)) return std::nullopt;
  const auto& loops = nest->loops;
  const ir::Set* store = nest->store;
  const auto update = parse_matmul_update(*store);
  if (!update) return std::nullopt;
  std::int64_t cells = 1, steps = 1;
  const ir::For* outer_reduction = nullptr;
  for (const ir::For* f : loops) {
    if (ir::mentions(store->index, f->index)) {
      cells *= extent(*f);
    } else {
      steps *= extent(*f);
      const bool in_both = ir::mentions(update->a->index, f->index) && ir::mentions(update->b->index, f->index);
      if (!outer_reduction && in_both) outer_reduction = f;
    }
  }
  if (!outer_reduction || outer_reduction != loops.front() || cells > max_cells || steps < min_steps ||
      extent(*outer_reduction) % partials != 0)
    return std::nullopt;
  SplitPartialsPlan plan{split(outer_reduction->index, extent(*outer_reduction) / partials), {}};
  plan.partials.top = plan.split.outer;
  plan.partials.keep.push_back(plan.split.outer);
  // The cells in d's axis order, so p is laid out like d (its unit stride d's): the tile over p
  // then reads its operands along the same runs as one over d would.
  for (const ir::AxisIndex& axis : store->index)
    for (const ir::For* f : loops)
      if (axis.mentions(f->index) &&
          std::find(plan.partials.keep.begin(), plan.partials.keep.end(), f->index) == plan.partials.keep.end())
        plan.partials.keep.push_back(f->index);
  plan.partials = with_scatter_loops(std::move(plan.partials));
  return plan;
}

}  // namespace cannl::schedule::detail
