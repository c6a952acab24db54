// Nests the default GPU schedule turns into new nests before planning their launch (with the
// re-association licence): a convolution's input gradient gathered as the transposed
// convolution, a tile with too few blocks split along its reduction (split-K), and an
// accumulation into few cells (or a shared store) staged into partials. See the declarations
// in gpu_scheduler.h.
#include <algorithm>

#include "cannl/ir/target.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/gpu_scheduler.h"
#include "schedule/gpu_tile_nest.h"
#include "schedule/loop_tree.h"
#include "schedule/matmul_nest.h"
#include "schedule/window_nest.h"

namespace cannl::schedule::detail {

namespace {

// Staged partials: only for fewer cells than this many blocks' worth of threads, and at most
// this many partial cells in all.
constexpr std::int64_t kFewCellBlocks = 16;
constexpr std::int64_t kMaxPartialCells = std::int64_t{1} << 20;
// Any accumulation of at least this many steps per cell (a convolution's weight gradient over
// a batch of images) is staged too, as far as the partials fit.
constexpr std::int64_t kLongReduction = 4096;
// A store several cell iterations share (a convolution's input gradient dx[b, h + kh, ..]) is
// staged into partials over every loop it mentions (one thread each, summing the others: the
// output channels) when each sums at least this many updates and they fit this many cells.
constexpr std::int64_t kMinSharedSteps = 4;
constexpr std::int64_t kMaxSharedPartialCells = std::int64_t{1} << 24;
// Split-K (split_k): a tile with fewer blocks of this many cells (the smallest blocking, 32 x 32;
// a tensor-core tile's own MMA blocking) than gpu_split_k_blocks_per_unit per compute unit gets
// its reduction split into up to this many chunks of at least this many steps.
constexpr std::int64_t kSplitKBlockCells = 32 * 32;
constexpr std::int64_t kMaxSplitKParts = 8;
constexpr std::int64_t kMinSplitKChunk = 128;
// A reduction no chunk count divides is split after peeling its last steps only when they are
// at most 1 / this many of a chunk: the tail runs as a pass of its own over every cell.
constexpr std::int64_t kMinChunksPerPeeledTail = 8;
// A convolution's input gradient as the transposed convolution (gather_windows) when the zero
// border grows the work at most this many times.
constexpr double kMaxGatherGrowth = 2.0;

// Each axis of the index holds at most one loop symbol and no symbol repeats: distinct values
// of the loops it mentions address distinct cells.
bool injective(const std::vector<ir::AxisIndex>& index) {
  std::vector<ir::Symbol> seen;
  for (const auto& axis : index) {
    if (axis.terms.size() > 1) return false;
    for (const auto& term : axis.terms) {
      if (term.coeff == 0 || std::find(seen.begin(), seen.end(), term.symbol) != seen.end()) return false;
      seen.push_back(term.symbol);
    }
  }
  return true;
}

std::int64_t isqrt(std::int64_t n) {
  std::int64_t r = 0;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

}  // namespace

std::vector<ir::Symbol> GpuScheduler::gather_windows(ir::Symbol top) {
  const auto site = detail::find_loop(routine_.body, top);
  if (!site || !site->enclosing.empty()) return {};
  const auto plan = detail::plan_gather_windows(routine_, *site->loop, kMaxGatherGrowth, options_.target.min_tile_work,
                                                options_.target, /*must_tile=*/false);
  return plan ? staged_tops(top, {*plan}) : std::vector<ir::Symbol>{};
}

std::optional<GpuScheduler::AccumulationNest> GpuScheduler::accumulation_nest(ir::Symbol top) const {
  const auto site = detail::find_loop(routine_.body, top);
  if (!site || site->in_tile || site->in_local_scope || site->under_if || !site->enclosing.empty()) return std::nullopt;
  AccumulationNest n{top, {}, nullptr, {}, {}, 1, 1};
  ir::StmtRef leaf;
  n.loops = detail::perfect_nest(*site->loop, leaf);
  n.store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  if (!n.store || detail::accumulation_op(n.store->node, n.store->index, n.store->value) != ir::Op::Add)
    return std::nullopt;
  for (const ir::For* f : n.loops) {
    if (f->axis != ir::AxisType::Serial) return std::nullopt;
    if (ir::mentions(n.store->index, f->index)) {
      n.cells *= extent_of(*f);
      n.cell_loops.push_back(f->index);
    } else {
      n.steps *= extent_of(*f);
      n.reductions.push_back(f);
    }
  }
  return n;
}

std::vector<ir::Symbol> GpuScheduler::split_k(ir::Symbol top) {
  const std::int64_t units = options_.target.gpu.compute_units;
  const std::int64_t wanted_blocks = options_.split_k_blocks_per_unit * units;
  if (!options_.tiles || wanted_blocks <= 0) return {};
  const std::optional<AccumulationNest> n = accumulation_nest(top);
  if (!n || n->reductions.empty() || !injective(n->store->index)) return {};
  for (const ir::For* f : n->loops)
    if (f->begin != 0) return {};
  const ir::For& reduction = *n->reductions.front();  // the outermost (the batch of b x s tokens)
  // Tensor-core tiles keep their MMA blocking (up to gpu_mma_tile's cells; the device is not
  // refilled with smaller blocks), so where the target has tensor cores the cheap test counts the
  // fewest blocks a tile could have.
  const ir::TileBlocking& mma = options_.target.gpu_mma_tile;
  const std::int64_t largest_block = options_.target.gpu_mma_formats.empty() || !mma.blocked()
                                         ? kSplitKBlockCells
                                         : std::max<std::int64_t>(kSplitKBlockCells, std::int64_t{mma.bm} * mma.bn);
  // Few cells over many steps get more partials from stage_partials (about sqrt(steps) a cell)
  // than split-K's chunks give, where it stages them.
  if (n->cells / largest_block >= wanted_blocks || n->steps < 2 * kMinSplitKChunk ||
      (few_cells_over_many_steps(n->cells, n->steps) && partials_plan(*n).parts >= 2))
    return {};
  // Then the costly test: only a nest the GPU runs as a tile is split, counted in its blocks.
  const std::optional<ScheduledRoutine> tiled = detail::tile_gpu_nest(routine_, top, options_);
  if (!tiled) return {};
  const std::int64_t blocks = n->cells / split_k_block_cells(tiled->routine);
  if (blocks >= wanted_blocks) return {};
  std::int64_t parts = 1;
  while (parts < kMaxSplitKParts && std::max<std::int64_t>(1, blocks) * parts < wanted_blocks) parts *= 2;
  // The most chunks of at least kMinSplitKChunk steps that divide the outer reduction loop.
  const std::int64_t dividing = divisor_at_most(extent_of(reduction), std::min(parts, n->steps / kMinSplitKChunk));
  return dividing >= 2 ? split_into_chunks(*n, dividing) : peeled_split_k(*n, parts);
}

std::vector<ir::Symbol> GpuScheduler::split_into_chunks(const AccumulationNest& n, std::int64_t parts) {
  const ir::For& reduction = *n.reductions.front();
  std::vector<Transform> transforms;
  ir::Symbol chunk = reduction.index;  // the loop over the chunks: all of the outer loop, or its split's outer part
  if (parts < extent_of(reduction)) {
    const Split s = split(reduction.index, extent_of(reduction) / parts);
    transforms.push_back(s);
    chunk = s.outer;
  }
  const ir::Symbol new_top = n.top == reduction.index ? chunk : n.top;
  std::vector<ir::Symbol> keep{chunk};
  keep.insert(keep.end(), n.cell_loops.begin(), n.cell_loops.end());
  transforms.push_back(with_scatter_loops(StagePartials{new_top, keep}));
  return staged_tops(new_top, transforms);
}

std::vector<ir::Symbol> GpuScheduler::peeled_split_k(const AccumulationNest& n, std::int64_t parts) {
  const ir::For& reduction = *n.reductions.front();
  const ir::Symbol r = reduction.index;
  const std::int64_t extent = extent_of(reduction), inner_steps = n.steps / extent;
  // The most chunks (up to `parts`) of at least kMinSplitKChunk steps, the tail a small fraction
  // of one (GPT-2's vocabulary: 2 chunks of 25128 steps, a tail of 1).
  for (; parts >= 2; --parts) {
    const std::int64_t chunk = extent / parts, tail = extent % parts;
    if (chunk * inner_steps >= kMinSplitKChunk && tail * kMinChunksPerPeeledTail <= chunk) break;
  }
  const std::int64_t head = extent - extent % parts;
  if (parts < 2 || head == extent) return {};
  const std::vector<Swap> swaps = swaps_to(n.loops, {r});
  Checkpoint before = checkpoint();
  // The swaps committed first: the Partition mints its segments' loops from the swapped nest.
  const std::optional<ir::LoweredRoutine> outermost = swapped(routine_, swaps);
  if (!outermost) return {};
  commit(*outermost, {swaps.begin(), swaps.end()});
  const auto site = detail::find_loop(routine_.body, r);
  const std::vector<ir::Symbol> segments =
      site ? staged_tops(r, {partition(*site->loop, {head})}) : std::vector<ir::Symbol>{};
  // The head in exactly the chunks the tail was sized against, or nothing at all: a partition
  // left unsplit would be two passes over every cell for nothing.
  const std::optional<AccumulationNest> head_nest = segments.size() == 2 ? accumulation_nest(segments[0]) : std::nullopt;
  std::vector<ir::Symbol> tops;
  if (head_nest && !head_nest->reductions.empty() && head_nest->reductions.front()->index == segments[0])
    tops = split_into_chunks(*head_nest, parts);
  if (tops.empty()) {
    restore(std::move(before));
    return {};
  }
  tops.push_back(segments[1]);
  return tops;
}

std::int64_t GpuScheduler::split_k_block_cells(const ir::LoweredRoutine& tiled) const {
  std::int64_t cells = kSplitKBlockCells;
  ir::for_each_stmt(tiled.body, [&](const ir::Stmt& s) {
    const auto* t = std::get_if<ir::TileMma>(&s.node);
    const ir::NarrowFormat f = t ? ir::tensor_core_format(*t, options_.target) : ir::NarrowFormat::None;
    if (f == ir::NarrowFormat::None) return;
    const ir::TileBlocking b = ir::fitted_mma_blocking(options_.target.gpu_mma_tile, f, t->rows(), t->cols(), t->steps());
    if (b.blocked()) cells = std::max<std::int64_t>(cells, std::int64_t{b.bm} * b.bn);
  });
  return cells;
}

bool GpuScheduler::few_cells_over_many_steps(std::int64_t cells, std::int64_t steps) const {
  return cells < kFewCellBlocks * block_ && steps >= kMuchWork * options_.min_parallel;
}

std::vector<ir::Symbol> GpuScheduler::stage_partials(ir::Symbol top) {
  const std::optional<AccumulationNest> n = accumulation_nest(top);
  if (!n) return {};
  if (!injective(n->store->index)) {
    const auto shared = detail::plan_shared_store(*n->loops.front(), kMinSharedSteps, kMaxSharedPartialCells);
    return shared ? staged_tops(top, {*shared}) : std::vector<ir::Symbol>{};
  }
  if (n->reductions.empty() || !(few_cells_over_many_steps(n->cells, n->steps) || n->steps >= kLongReduction)) return {};
  PartialsPlan plan = partials_plan(*n);
  if (plan.parts < 2) return {};
  plan.steps.push_back(with_scatter_loops(StagePartials{plan.top, plan.keep}));
  return staged_tops(plan.top, plan.steps);
}

GpuScheduler::PartialsPlan GpuScheduler::partials_plan(const AccumulationNest& n) {
  const std::int64_t want = std::min(isqrt(n.steps), kMaxPartialCells / n.cells);
  PartialsPlan plan{{}, n.cell_loops, 1, n.top};
  for (const ir::For* f : n.reductions) {
    if (plan.parts * extent_of(*f) <= want) {
      plan.keep.push_back(f->index);
      plan.parts *= extent_of(*f);
      continue;
    }
    const std::int64_t d = divisor_at_most(extent_of(*f), want / plan.parts);
    if (d > 1) {
      const Split s = split(f->index, extent_of(*f) / d);
      plan.steps.push_back(s);
      plan.keep.push_back(s.outer);
      plan.parts *= d;
      if (f->index == n.top) plan.top = s.outer;
    }
    break;
  }
  return plan;
}

std::vector<ir::Symbol> GpuScheduler::staged_tops(ir::Symbol top, const std::vector<Transform>& steps) {
  std::vector<ir::Symbol> before;
  for (const auto& x : flatten_seq(routine_.body))
    if (const auto* f = std::get_if<ir::For>(&x->node)) before.push_back(f->index);
  try {
    commit(schedule::apply(routine_, steps), steps);
  } catch (const ScheduleError&) {
    return {};  // apply returns a new routine or throws
  }
  std::vector<ir::Symbol> tops;
  for (const auto& x : flatten_seq(routine_.body)) {
    const auto* f = std::get_if<ir::For>(&x->node);
    if (f && (f->index == top || std::find(before.begin(), before.end(), f->index) == before.end()))
      tops.push_back(f->index);
  }
  return tops;
}

}  // namespace cannl::schedule::detail
