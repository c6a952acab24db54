// The default GPU schedule (see default_gpu.h). Per top-level nest: the chain of provably
// parallel loops from its top (each loop the whole body of the one before, so Grid loops never
// sit under a serial loop), reordered so a loop contiguous in a written node is innermost, then
// the first plan that fits the device: the loops above the chosen thread loop become Grid (slot
// 0 innermost), the thread loop Workgroup (split by the block size when longer: outer Grid,
// inner Workgroup), and a short thread loop takes a second thread dimension from the loop above.
// With the re-association licence, an accumulation into few cells over a long reduction (or
// into a shared store) is first staged into partials (stage_partials), and each resulting nest
// is scheduled as above. A chain whose threads would each walk a long scatter gets a loop over
// buckets of its target rows on top (BucketScatter). A matmul-like nest (plain, batched, or
// folding its loops into one tile) becomes a tile the GPU runs staged and register-blocked
// instead (gpu_tile_nest.h).
#include "cannl/schedule/default_gpu.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/kernel_cost.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/legality.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/gpu_tile_nest.h"
#include "schedule/loop_tree.h"
#include "schedule/matmul_nest.h"
#include "schedule/window_nest.h"
#include "schedule/parallel_loops.h"

namespace cannl::schedule {

namespace {

using detail::flatten_seq;

std::int64_t extent_of(const ir::For& f) { return f.end - f.begin; }

// A nest of at least this many times min_parallel iterations shares them out on a parallel
// chain shorter than min_parallel; an accumulation with at least this many times min_parallel
// steps per cell may be staged into partials.
constexpr std::int64_t kMuchWork = 16;
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
// Split-K (split_k): a tile with fewer blocks of this many cells (the smallest blocking, 32 x 32)
// than this many per compute unit gets its reduction split into up to this many chunks of at
// least this many steps.
constexpr std::int64_t kSplitKBlockCells = 32 * 32;
constexpr std::int64_t kSplitKBlocksPerUnit = 4;
constexpr std::int64_t kMaxSplitKParts = 8;
constexpr std::int64_t kMinSplitKChunk = 128;
// A convolution's input gradient as the transposed convolution (gather_windows) when the zero
// border grows the work at most this many times.
constexpr double kMaxGatherGrowth = 2.0;
// Row reductions on blocks (block_reduce_nest): at least this many steps (a licensed sum or
// product: this many), on blocks of at least this many threads, and on a device that does not
// say how many units it has, for fewer cells than this.
constexpr std::int64_t kBlockReductionSteps = 64;
constexpr std::int64_t kLicensedBlockReductionSteps = 256;
constexpr std::int64_t kMinBlockReductionThreads = 32;
constexpr std::int64_t kUnknownDeviceThreads = std::int64_t{1} << 16;
// A scatter whose threads would each walk at least this many steps is bucketed by target row
// (BucketScatter); with `gpu_scatter_buckets=auto` into enough buckets that the launch has
// about this many threads per compute unit: half of what a recent NVIDIA multiprocessor keeps
// resident, enough warps to hide the latency of the row reads. Every bucket's thread still reads
// every row (the work per thread stays the scatter's length), so more buckets would only add
// compares; fewer leave each thread more of the read-modify-writes in a serial chain.
constexpr std::int64_t kLongScatter = 256;
constexpr std::int64_t kScatterThreadsPerUnit = 1024;

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

// The largest divisor of n that is at most `most` (1 when none above 1 is).
std::int64_t divisor_at_most(std::int64_t n, std::int64_t most) {
  for (std::int64_t d = std::min(n, most); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

std::int64_t isqrt(std::int64_t n) {
  std::int64_t r = 0;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

// A device limit; 0 (unknown) does not limit.
std::int64_t limit_of(std::int64_t value) { return value > 0 ? value : std::numeric_limits<std::int64_t>::max(); }

std::int64_t clamped_block(const GpuScheduleOptions& o) {
  return std::max<std::int64_t>(1, std::min({o.block_size, limit_of(o.target.gpu.max_threads_per_block),
                                             limit_of(o.target.gpu.max_block_dims[0])}));
}

const ir::For* loop_at(const ir::LoweredRoutine& r, ir::Symbol s) {
  const auto site = detail::find_loop(r.body, s);
  return site ? site->loop : nullptr;
}

// The fewest rows a scatter under `s` chooses from (0: `s` holds no scatter).
std::int64_t fewest_scatter_rows(const ir::StmtRef& s) {
  std::int64_t rows = 0;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    if (const auto* d = std::get_if<ir::SetDynamic>(&x.node)) {
      const std::int64_t n = d->node->dims[static_cast<std::size_t>(d->dyn_axis)];
      rows = rows == 0 ? n : std::min(rows, n);
    }
  });
  return rows;
}

// Whether some store under loop `s` moves contiguously with it (consecutive threads then write
// consecutive cells: coalesced on every GPU).
bool contiguous_store(const ir::For& f) {
  bool found = false;
  ir::for_each_stmt(f.body, [&](const ir::Stmt& x) {
    if (const auto* set = std::get_if<ir::Set>(&x.node)) found = found || ir::contiguous_in(set->index, f.index);
  });
  return found;
}

// One way of mapping a nest's parallel chain onto the launch: the transforms and the extents of
// the Grid slots they make, innermost (slot 0) first.
struct Plan {
  std::vector<Transform> steps;
  std::vector<std::int64_t> grid_extents;
  std::int64_t parallel = 1;  // iterations the annotated loops share out
};

class GpuScheduler {
 public:
  GpuScheduler(const ir::LoweredRoutine& r, const GpuScheduleOptions& o)
      : routine_(r), options_(o), block_(clamped_block(o)) {}

  // Each top-level nest is scheduled in a routine of its own and spliced back: every decision
  // reads and every transform rewrites one nest only, and walking the whole routine for each of
  // them would cost time quadratic in its size (a GPT-2 124M training step has over a thousand
  // nests).
  ScheduledRoutine run() {
    const std::vector<ir::StmtRef> stmts = flatten_seq(routine_.body);
    if (stmts.size() <= 1) return run_nests();
    std::vector<ir::StmtRef> out;
    for (const ir::StmtRef& s : stmts) {
      if (!std::holds_alternative<ir::For>(s->node)) {
        out.push_back(s);
        continue;
      }
      ScheduledRoutine one = GpuScheduler({routine_.name, ir::seq({s}), routine_.statics, {}}, options_).run_nests();
      for (const ir::StmtRef& x : flatten_seq(one.routine.body)) out.push_back(x);
      applied_.insert(applied_.end(), one.transforms.begin(), one.transforms.end());
    }
    routine_.body = ir::seq(std::move(out));
    return {routine_, applied_};
  }

 private:
  ScheduledRoutine run_nests() {
    // The nests' tops first: each nest's transforms address its own loops only.
    std::vector<ir::Symbol> tops;
    for (const auto& s : flatten_seq(routine_.body))
      if (const auto* f = std::get_if<ir::For>(&s->node)) tops.push_back(f->index);
    for (const ir::Symbol top : tops) {
      std::vector<ir::Symbol> staged = options_.reassociate ? gather_windows(top) : std::vector<ir::Symbol>{};
      if (staged.empty() && options_.reassociate) staged = split_k(top);
      // Rows whose blocks fill the device are better reduced in place than staged: 64 rows of a
      // 50257-entry vocabulary take 197 steps a thread on blocks, 1733 as 29 partials a row. A
      // matmul keeps its way (partials where it has few cells, else a tile).
      if (staged.empty() && options_.reassociate && reduces_into_its_store(top) &&
          !detail::tile_gpu_nest(routine_, top, options_) && block_reduce_nest(top, /*only_filling=*/true))
        continue;
      if (staged.empty() && options_.reassociate) staged = stage_partials(top);
      if (staged.empty()) tile_or_schedule_nest(top);
      for (const ir::Symbol s : staged) tile_or_schedule_nest(s);
    }
    return {routine_, applied_};
  }

  ir::LoweredRoutine routine_;
  const GpuScheduleOptions& options_;
  std::int64_t block_;
  /// The transforms that made routine_ from the input, in order (the tuner replays them).
  std::vector<Transform> applied_;

  // Takes `r`, made from routine_ by `steps`, as the routine.
  void commit(ir::LoweredRoutine r, const std::vector<Transform>& steps) {
    routine_ = std::move(r);
    applied_.insert(applied_.end(), steps.begin(), steps.end());
  }

  // A matmul-like nest as a tile the GPU runs blocked (gpu_tile_nest.h), else a row reduction
  // on blocks, else the launch plan.
  void tile_or_schedule_nest(ir::Symbol top) {
    if (auto tiled = detail::tile_gpu_nest(routine_, top, options_)) {
      commit(std::move(tiled->routine), tiled->transforms);
      return;
    }
    if (block_reduce_nest(top, /*only_filling=*/false)) return;
    schedule_nest(top);
  }

  // Cells over one long reduction each (`for cells: for r: d[cells] = max(d[cells], v(r))`: a
  // row's max or sum in a softmax, a cross-entropy or a layer norm), with fewer cells than the
  // device runs threads: one block per cell, whose threads each compute v(r) of one step (of
  // consecutive steps: coalesced reads along a row) and combine them in a block reduction
  // (ir/block_reduction.h), the reduction's slices of block size in order. One thread per cell
  // would leave most of the device idle while each walks its whole row. Max and min combine to
  // the serial loop's bits in any tree (maximumNumber orders every value, NaNs and signed zeros
  // included); a sum or product re-associates, so only with the licence and a longer reduction
  // (unless the cells are too few to share the nest out at all). `only_filling`: only where the
  // blocks do not starve the device (ir/kernel_cost.h).
  bool block_reduce_nest(ir::Symbol top, bool only_filling) {
    if (!reduces_into_its_store(top)) return false;  // the cheap test before reordering the nest
    const ir::LoweredRoutine before = routine_;
    const std::size_t applied_before = applied_.size();
    const std::vector<ir::Symbol> chain = cells_outward(top, parallel_chain(routine_, top));
    if (const std::optional<Plan> plan = block_reduction_plan(chain, only_filling)) {
      try {
        commit(schedule::apply(routine_, plan->steps), plan->steps);
        return true;
      } catch (const ScheduleError&) {
        // proven legal above; a refusal falls back to the launch plan, never wrong
      }
    }
    routine_ = before;
    applied_.resize(applied_before);
    return false;
  }

  // Whether the perfect nest under `top` ends in one accumulation with a loop its store's index
  // does not mention (a reduction).
  bool reduces_into_its_store(ir::Symbol top) const {
    const ir::For* f = loop_at(routine_, top);
    if (f == nullptr) return false;
    ir::StmtRef leaf;
    const std::vector<const ir::For*> nest = detail::perfect_nest(*f, leaf);
    const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
    if (store == nullptr || !detail::accumulation_op(store->node, store->index, store->value)) return false;
    return std::any_of(nest.begin(), nest.end(), [&](const ir::For* g) { return !ir::mentions(store->index, g->index); });
  }

  std::optional<Plan> block_reduction_plan(const std::vector<ir::Symbol>& chain, bool only_filling) const {
    if (chain.empty() || chain.size() > 3) return std::nullopt;
    const auto body = flatten_seq(loop_at(routine_, chain.back())->body);
    const auto* r = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
    if (r == nullptr || r->axis != ir::AxisType::Serial || r->begin != 0) return std::nullopt;
    const std::optional<ir::BlockReduction> reduction = ir::block_reduction(*r);
    if (!reduction) return std::nullopt;
    const bool bitwise = reduction->accum == ir::Op::Max || reduction->accum == ir::Op::Min;
    const std::int64_t steps = extent_of(*r), cells = parallel_iterations(routine_, chain);
    // A licensed sum needs a long row, or so few cells that the nest would share out no threads
    // (a bias gradient's 10 cells over a batch of 64, partials added into their cells).
    const bool long_enough = steps >= (bitwise || cells < options_.min_parallel ? kBlockReductionSteps
                                                                                : kLicensedBlockReductionSteps);
    if (!long_enough || !(bitwise || options_.reassociate) || cells >= resident_threads()) return std::nullopt;
    // Slices of a divisor of the row when one fills at least half a block, else of a whole block
    // with the last slice guarded (a vocabulary of 50257 = 29 x 1733 entries).
    std::int64_t threads = steps <= block_ ? steps : divisor_at_most(steps, block_);
    if (2 * threads < block_) threads = std::min(steps, block_);
    if (threads < kMinBlockReductionThreads) return std::nullopt;
    const double share = static_cast<double>(cells * threads) / static_cast<double>(resident_threads());
    if (only_filling && share < ir::kStarvedDeviceShare) return std::nullopt;
    Plan plan;
    plan.steps.push_back(threads == steps ? Transform{Retype{r->index, ir::AxisType::WorkgroupReduce}}
                                          : Transform{split(r->index, threads, ir::AxisType::Serial,
                                                            ir::AxisType::WorkgroupReduce)});
    for (std::size_t m = chain.size(); m-- > 0;) {
      const std::size_t slot = chain.size() - 1 - m;
      if (extent_of(*loop_at(routine_, chain[m])) > limit_of(options_.target.gpu.max_grid_dims[slot])) return std::nullopt;
      plan.steps.push_back(Retype{chain[m], ir::AxisType::Grid});
    }
    return plan;
  }

  // Threads the device keeps resident (a fixed guess when it does not say how many units it has).
  std::int64_t resident_threads() const {
    const std::int64_t known = ir::device_resident_threads(options_.target.gpu);
    return known > 0 ? known : kUnknownDeviceThreads;
  }

  // A scatter over sliding windows (a stride-1 convolution's input gradient) as the transposed
  // convolution, when its zero border grows the work at most kMaxGatherGrowth times (a licensed
  // re-association; schedule/window_nest.h): every cell of the gradient gets its updates from
  // one iteration of the cell loops, so the cells are the threads (or the rows and columns of a
  // tile, where the gather tiles like a forward convolution). Staged into partials instead
  // (below), the partials' sum into the gradient could share out only the batch and the
  // channels, each thread adding every window of its cells in order. Returns the new top-level
  // nests (the copy filling the zero-bordered operand, the gathered nest), or nothing.
  std::vector<ir::Symbol> gather_windows(ir::Symbol top) {
    const auto site = detail::find_loop(routine_.body, top);
    if (!site || !site->enclosing.empty()) return {};
    const auto plan = detail::plan_gather_windows(routine_, *site->loop, kMaxGatherGrowth, options_.target.min_tile_work,
                                                  options_.target, /*must_tile=*/false);
    return plan ? staged_tops(top, {*plan}) : std::vector<ir::Symbol>{};
  }

  // Split-K: a matmul-like nest (a weight gradient dw[i, j] += x[b, i] * dy[b, j] over the
  // tokens) whose tile would have too few blocks for the device even at the smallest blocking
  // (kSplitKBlockCells cells each), over a long reduction: the reduction's outermost loop split
  // into `parts` chunks (a divisor, at most kMaxSplitKParts, each at least kMinSplitKChunk steps),
  // staged into partials p[chunk, cells..] (a batched matmul: the chunks on the Grid around the
  // tile) and a second nest adding the chunks into each cell in order. A licensed
  // re-association; the tile's threads each keep their register block.
  std::vector<ir::Symbol> split_k(ir::Symbol top) {
    const std::int64_t units = options_.target.gpu.compute_units;
    if (!options_.tiles || units <= 0) return {};
    const auto site = detail::find_loop(routine_.body, top);
    if (!site || !site->enclosing.empty()) return {};
    ir::StmtRef leaf;
    const std::vector<const ir::For*> nest = detail::perfect_nest(*site->loop, leaf);
    const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
    if (!store || !injective(store->index) ||
        detail::accumulation_op(store->node, store->index, store->value) != ir::Op::Add)
      return {};
    std::int64_t cells = 1, steps = 1;
    std::vector<ir::Symbol> cell_loops;
    const ir::For* reduction = nullptr;  // the outermost reduction loop (the batch of b x s tokens)
    for (const ir::For* f : nest) {
      if (f->axis != ir::AxisType::Serial || f->begin != 0) return {};
      if (ir::mentions(store->index, f->index)) {
        cells *= extent_of(*f);
        cell_loops.push_back(f->index);
      } else {
        steps *= extent_of(*f);
        if (reduction == nullptr) reduction = f;
      }
    }
    const std::int64_t blocks = cells / kSplitKBlockCells;
    if (reduction == nullptr || blocks >= kSplitKBlocksPerUnit * units) return {};
    std::int64_t parts = 1;
    while (parts < kMaxSplitKParts && std::max<std::int64_t>(1, blocks) * parts < kSplitKBlocksPerUnit * units) parts *= 2;
    parts = divisor_at_most(extent_of(*reduction), std::min(parts, steps / kMinSplitKChunk));
    // Last, the costly test: only a nest the GPU runs as a tile is split.
    if (parts < 2 || !detail::tile_gpu_nest(routine_, top, options_)) return {};
    std::vector<Transform> transforms;
    ir::Symbol chunk = reduction->index;  // the loop over the chunks: all of the outer loop, or its split's outer part
    if (parts < extent_of(*reduction)) {
      const Split s = split(reduction->index, extent_of(*reduction) / parts);
      transforms.push_back(s);
      chunk = s.outer;
    }
    const ir::Symbol new_top = top == reduction->index ? chunk : top;
    std::vector<ir::Symbol> keep{chunk};
    keep.insert(keep.end(), cell_loops.begin(), cell_loops.end());
    transforms.push_back(with_scatter_loops(StagePartials{new_top, keep}));
    return staged_tops(new_top, transforms);
  }

  // A perfect nest around one add-accumulation d[idx] += v into few cells (injective idx) over a
  // long reduction (or into any number of cells over a very long one), staged (a licensed
  // re-association): the reduction loops, outermost first, kept whole while their product stays
  // within about sqrt(steps) partials per cell, the next one split at a divisor to fill the
  // rest; then StagePartials gives p[kept, cells] += v, a nest whose cells are many (one thread
  // each, over a block of the reduction), and a second nest adding p into d in the kept loops'
  // order. Fission cuts between them (the second reads
  // every partial). A store several cell iterations share (dx[b, h + kh, w + kw, c] of a
  // convolution's input gradient, whose bitwise chain is only b and c) is staged over every
  // loop it mentions instead (plan_shared_store): p[b, h, kh, w, kw, c] sums the output
  // channels, one thread per cell; the second nest adds p into dx with b and c on threads.
  // Returns the new top-level nests to schedule, or nothing (routine unchanged).
  std::vector<ir::Symbol> stage_partials(ir::Symbol top) {
    const auto site = detail::find_loop(routine_.body, top);
    if (!site || site->in_tile || site->in_local_scope || site->under_if || !site->enclosing.empty()) return {};
    ir::StmtRef leaf;
    const std::vector<const ir::For*> nest = detail::perfect_nest(*site->loop, leaf);
    const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
    if (!store || detail::accumulation_op(store->node, store->index, store->value) != ir::Op::Add) return {};
    if (!injective(store->index)) {
      const auto shared = detail::plan_shared_store(*site->loop, kMinSharedSteps, kMaxSharedPartialCells);
      return shared ? staged_tops(top, {*shared}) : std::vector<ir::Symbol>{};
    }
    std::int64_t cells = 1, steps = 1;
    std::vector<const ir::For*> reductions;
    std::vector<ir::Symbol> keep;
    for (const ir::For* f : nest) {
      if (f->axis != ir::AxisType::Serial) return {};
      if (ir::mentions(store->index, f->index)) {
        cells *= extent_of(*f);
        keep.push_back(f->index);
      } else {
        steps *= extent_of(*f);
        reductions.push_back(f);
      }
    }
    const bool few_cells = cells < kFewCellBlocks * block_ && steps >= kMuchWork * options_.min_parallel;
    if (reductions.empty() || !(few_cells || steps >= kLongReduction)) return {};
    const std::int64_t want = std::min(isqrt(steps), kMaxPartialCells / cells);
    std::vector<Transform> steps_taken;
    std::int64_t parts = 1;
    ir::Symbol new_top = top;
    for (const ir::For* f : reductions) {
      if (parts * extent_of(*f) <= want) {
        keep.push_back(f->index);
        parts *= extent_of(*f);
        continue;
      }
      const std::int64_t d = divisor_at_most(extent_of(*f), want / parts);
      if (d > 1) {
        const Split s = split(f->index, extent_of(*f) / d);
        steps_taken.push_back(s);
        keep.push_back(s.outer);
        parts *= d;
        if (f->index == top) new_top = s.outer;
      }
      break;
    }
    if (parts < 2) return {};
    steps_taken.push_back(with_scatter_loops(StagePartials{new_top, keep}));
    return staged_tops(new_top, steps_taken);
  }

  // `steps` applied (ending in a StagePartials of the nest `top`): the top-level nests it made,
  // in order; nothing (the routine unchanged) when a step is refused.
  std::vector<ir::Symbol> staged_tops(ir::Symbol top, const std::vector<Transform>& steps) {
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

  // The loops from `top` down, each the whole body of the one before, that may run in parallel
  // (proven independent, not choosing a scatter's row), outermost first.
  std::vector<ir::Symbol> parallel_chain(const ir::LoweredRoutine& r, ir::Symbol top) const {
    const auto site = detail::find_loop(r.body, top);
    if (!site || site->in_tile || site->in_local_scope || site->under_if || !site->enclosing.empty()) return {};
    std::vector<ir::Symbol> chain;
    for (const ir::For* f = site->loop; f != nullptr;) {
      if (!detail::provably_parallel(r, *f, 1) || detail::drives_dynamic_write(site->stmt, f->index)) break;
      chain.push_back(f->index);
      const auto body = flatten_seq(f->body);
      f = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
    }
    return chain;
  }

  // `r` after the swaps, or nullopt when Swap refuses one. Swap alone may re-associate a
  // reduction: callers keep the result only when the moved loops are then proven independent.
  static std::optional<ir::LoweredRoutine> swapped(ir::LoweredRoutine r, const std::vector<Swap>& swaps) {
    for (const Swap& s : swaps) {
      try {
        r = schedule::apply(r, s);
      } catch (const ScheduleError&) {
        return std::nullopt;
      }
    }
    return r;
  }

  // A nest left serial keeps its loop order (the reorderings only serve the launch).
  void schedule_nest(ir::Symbol top) {
    const ir::LoweredRoutine before = routine_;
    const std::size_t applied_before = applied_.size();
    std::vector<ir::Symbol> chain = cells_outward(top, parallel_chain(routine_, top));
    if (!chain.empty()) chain = contiguous_innermost(chain);
    chain = bucketed(chain.empty() ? top : chain.front(), chain);
    const ir::Symbol nest_top = chain.empty() ? top : chain.front();
    const bool much_work = detail::work_of(detail::find_loop(routine_.body, nest_top)->stmt) >= kMuchWork * options_.min_parallel;
    for (std::size_t w = chain.size(); w-- > 0;) {
      const std::optional<Plan> plan = plan_for(chain, w);
      if (!plan) continue;
      // Fewer threads for smaller w. Below min_parallel a nest of much work still shares it out:
      // a few threads beat one looping over everything.
      if (plan->parallel < options_.min_parallel && !(much_work && plan->parallel >= 2)) break;
      try {
        commit(schedule::apply(routine_, plan->steps), plan->steps);
        return;
      } catch (const ScheduleError&) {
        break;  // every step is proven legal above; a refusal leaves the nest serial, never wrong
      }
    }
    routine_ = before;
    applied_.resize(applied_before);
  }

  // The perfect nest under `top` with its cell loops (those every store's index mentions)
  // moved above the others (reductions, a scatter's rows), each group in its order, when the
  // cell loops are then a proven chain that shares out more iterations than `chain`. Every
  // cell's updates then happen in one iteration of the chain, in the order of the loops below,
  // which is kept: the same bits (db[o] += dy[b, o] becomes for o: for b).
  //
  // Two notions of cell loop are tried, the better chain kept: loops that some axis of every
  // store indexes alone (b and c of a convolution's input gradient dx[b, h + kh, w + kw, c],
  // moved above h, kh, w, kw, o: each cell's updates keep their order), then every loop the
  // stores mention (d[i + 10 j]).
  std::vector<ir::Symbol> cells_outward(ir::Symbol top, std::vector<ir::Symbol> chain) {
    for (const bool alone : {true, false}) chain = cells_outward(top, chain, alone);
    return chain;
  }

  std::vector<ir::Symbol> cells_outward(ir::Symbol top, const std::vector<ir::Symbol>& chain, bool alone) {
    ir::StmtRef leaf;
    const ir::For* top_loop = loop_at(routine_, chain.empty() ? top : chain.front());
    if (top_loop == nullptr) return chain;
    const std::vector<const ir::For*> nest = detail::perfect_nest(*top_loop, leaf);
    std::vector<ir::Symbol> order, rest;
    for (const ir::For* f : nest) (is_cell_loop(*nest.front(), f->index, alone) ? order : rest).push_back(f->index);
    const std::size_t cells = order.size();
    if (cells == 0 || rest.empty()) return chain;
    order.insert(order.end(), rest.begin(), rest.end());
    const std::vector<Swap> swaps = swaps_to(nest, order);
    const auto r = swapped(routine_, swaps);
    if (!r) return chain;
    std::vector<ir::Symbol> moved = parallel_chain(*r, order.front());
    if (moved.size() < cells || parallel_iterations(*r, moved) <= parallel_iterations(routine_, chain)) return chain;
    commit(*r, {swaps.begin(), swaps.end()});
    return moved;
  }

  // The chain with a loop over buckets of target rows on top (BucketScatter of the nest at
  // `nest_top`) when each of its threads would walk a long scatter serially (an embedding
  // gradient: the token loop chooses the rows, which repeat, so only the channels were
  // threads). Each bucket's threads walk every token and update the rows of their bucket only:
  // the read-modify-writes spread over buckets x channels threads, bitwise the serial scatter.
  // Kept when the whole new chain is proven (the guards make the buckets' rows disjoint).
  std::vector<ir::Symbol> bucketed(ir::Symbol nest_top, const std::vector<ir::Symbol>& chain) {
    if (options_.scatter_buckets == 0) return chain;
    // What each thread runs serially.
    const ir::StmtRef serial =
        chain.empty() ? detail::find_loop(routine_.body, nest_top)->stmt : loop_at(routine_, chain.back())->body;
    const std::int64_t rows = fewest_scatter_rows(serial);
    if (rows == 0 || detail::work_of(serial) < kLongScatter) return chain;
    std::int64_t buckets = options_.scatter_buckets;
    if (buckets == GpuScheduleOptions::kAutoScatterBuckets) {
      const std::int64_t units = options_.target.gpu.compute_units;
      if (units <= 0) return chain;
      const std::int64_t threads = chain.empty() ? 1 : parallel_iterations(routine_, chain);
      buckets = (units * kScatterThreadsPerUnit + threads - 1) / threads;
    }
    // At most one bucket per row, none empty, within a Grid slot.
    buckets = std::min({buckets, rows, limit_of(options_.target.gpu.max_grid_dims[1])});
    const std::int64_t width = (rows + buckets - 1) / buckets;
    buckets = (rows + width - 1) / width;
    if (buckets < 2) return chain;
    const BucketScatter b = bucket_scatter(nest_top, buckets);
    ir::LoweredRoutine r;
    try {
      r = schedule::apply(routine_, b);
    } catch (const ScheduleError&) {
      return chain;  // the nest holds more than scatters
    }
    std::vector<ir::Symbol> moved = parallel_chain(r, b.bucket);
    if (moved.size() != chain.size() + 1) return chain;
    commit(std::move(r), {b});
    return moved;
  }

  // Whether every store's index mentions loop `s` (with `alone`: has an axis that is `s` alone,
  // times a nonzero coefficient, plus a constant).
  static bool is_cell_loop(const ir::For& top, ir::Symbol s, bool alone) {
    const auto cell_of = [&](const std::vector<ir::AxisIndex>& index) {
      if (!alone) return ir::mentions(index, s);
      return std::any_of(index.begin(), index.end(), [&](const ir::AxisIndex& a) {
        return a.terms.size() == 1 && a.terms[0].symbol == s && a.terms[0].coeff != 0;
      });
    };
    bool every = true;
    ir::for_each_stmt(top.body, [&](const ir::Stmt& x) {
      if (const auto* set = std::get_if<ir::Set>(&x.node)) every = every && cell_of(set->index);
      if (const auto* d = std::get_if<ir::SetDynamic>(&x.node)) every = every && cell_of(d->index);
      if (std::holds_alternative<ir::ZeroOut>(x.node) || std::holds_alternative<ir::TileMma>(x.node)) every = false;
    });
    return every;
  }

  // Adjacent swaps taking the perfect nest `nest` (outermost first) to `order`.
  static std::vector<Swap> swaps_to(const std::vector<const ir::For*>& nest, const std::vector<ir::Symbol>& order) {
    std::vector<ir::Symbol> current;
    for (const ir::For* f : nest) current.push_back(f->index);
    std::vector<Swap> swaps;
    for (std::size_t p = 0; p < order.size(); ++p) {
      std::size_t q = static_cast<std::size_t>(std::find(current.begin(), current.end(), order[p]) - current.begin());
      for (; q > p; --q) {
        swaps.push_back(Swap{current[q - 1], current[q]});
        std::swap(current[q - 1], current[q]);
      }
    }
    return swaps;
  }

  static std::int64_t parallel_iterations(const ir::LoweredRoutine& r, const std::vector<ir::Symbol>& chain) {
    std::int64_t n = 1;
    for (const ir::Symbol s : chain) n *= extent_of(*loop_at(r, s));
    return chain.empty() ? 0 : n;
  }

  // The chain with its innermost loop contiguous in a written node moved innermost, when the
  // whole reordered chain is then proven: two distinct iterations of a proven chain touch no
  // written cell in common (they differ first at some loop, which is proven independent with
  // the loops inside it free), so any order of them computes the same bits.
  std::vector<ir::Symbol> contiguous_innermost(const std::vector<ir::Symbol>& chain) {
    std::size_t k = chain.size();
    for (std::size_t m = chain.size(); m-- > 0;) {
      const ir::For& f = *loop_at(routine_, chain[m]);
      if (extent_of(f) >= 2 && contiguous_store(f)) { k = m; break; }
    }
    if (k + 1 >= chain.size()) return chain;
    std::vector<Swap> swaps;
    for (std::size_t m = k + 1; m < chain.size(); ++m) swaps.push_back(Swap{chain[k], chain[m]});
    std::vector<ir::Symbol> order = chain;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    order.push_back(chain[k]);
    const auto r = swapped(routine_, swaps);
    if (!r || parallel_chain(*r, order.front()) != order) return chain;
    commit(*r, {swaps.begin(), swaps.end()});
    return order;
  }

  // chain[0 .. w) Grid, chain[w] the threads; nullopt when the Grid slots do not fit.
  std::optional<Plan> plan_for(const std::vector<ir::Symbol>& chain, std::size_t w) const {
    Plan plan;
    std::vector<const ir::For*> loops;
    for (std::size_t m = 0; m <= w; ++m) {
      loops.push_back(loop_at(routine_, chain[m]));
      plan.parallel *= extent_of(*loops.back());
    }
    const ir::For& threads = *loops[w];
    std::size_t grid_loops = w;  // chain[0 .. grid_loops) retyped Grid
    if (extent_of(threads) > block_) {
      plan.steps.push_back(split(threads.index, block_, ir::AxisType::Grid, ir::AxisType::Workgroup));
      plan.grid_extents.push_back((extent_of(threads) + block_ - 1) / block_);
    } else {
      plan.steps.push_back(Retype{threads.index, ir::AxisType::Workgroup});
      if (w > 0) second_thread_dimension(*loops[w - 1], extent_of(threads), plan, grid_loops);
    }
    for (std::size_t m = grid_loops; m-- > 0;) {
      plan.steps.push_back(Retype{loops[m]->index, ir::AxisType::Grid});
      plan.grid_extents.push_back(extent_of(*loops[m]));
    }
    if (plan.grid_extents.size() > 3) return std::nullopt;
    for (std::size_t slot = 0; slot < plan.grid_extents.size(); ++slot)
      if (plan.grid_extents[slot] > limit_of(options_.target.gpu.max_grid_dims[slot])) return std::nullopt;
    return plan;
  }

  // A thread loop shorter than half a block shares the block with the loop above it (threads
  // .y): that loop split so a block holds about block_size threads, its outer part the Grid.
  void second_thread_dimension(const ir::For& above, std::int64_t x, Plan& plan, std::size_t& grid_loops) const {
    const std::int64_t y = std::min({block_ / x, extent_of(above), limit_of(options_.target.gpu.max_block_dims[1])});
    if (y < 2) return;
    --grid_loops;
    if (y == extent_of(above)) {
      plan.steps.push_back(Retype{above.index, ir::AxisType::Workgroup});
      return;
    }
    plan.steps.push_back(split(above.index, y, ir::AxisType::Grid, ir::AxisType::Workgroup));
    plan.grid_extents.push_back((extent_of(above) + y - 1) / y);
  }
};

// `gpu_scatter_buckets`: auto, off or a count.
std::int64_t scatter_buckets_from_config() {
  const std::string value = config::get("gpu_scatter_buckets");
  if (value == "auto") return GpuScheduleOptions::kAutoScatterBuckets;
  if (value == "off") return 0;
  if (value.empty() || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw ConfigError("gpu_scatter_buckets must be auto, off or a bucket count, got '" + value + "' (from " +
                      config::source_of("gpu_scatter_buckets") + ")");
  return config::get_int_in("gpu_scatter_buckets", 1, std::int64_t{1} << 30);
}

}  // namespace

GpuScheduleOptions GpuScheduleOptions::from_config(const ir::Target& target) {
  return {.target = target,
          .block_size = config::get_int_in("gpu_schedule_block_size", 1, 1 << 20),
          .min_parallel = config::get_int_in("gpu_schedule_min_parallel", 1, 1LL << 40),
          .reassociate = config::get_bool("gpu_schedule_reassociate"),
          .tiles = config::get_bool("gpu_schedule_tiles"),
          .scatter_buckets = scatter_buckets_from_config()};
}

ScheduledRoutine plan_default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options) {
  return GpuScheduler(routine, options).run();
}

ir::LoweredRoutine default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options) {
  return plan_default_gpu_schedule(routine, options).routine;
}

}  // namespace cannl::schedule
