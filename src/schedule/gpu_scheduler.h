#pragma once
// The planner behind the default GPU schedule (default_gpu.h), one class over the files that
// make its decisions: the launch plan (default_gpu.cpp), row reductions on blocks
// (gpu_row_reductions.cpp), nests staged into partials, split along K or gathered
// (gpu_staged_nests.cpp), and scatters bucketed by target row (gpu_scatter_buckets.cpp). A
// GpuScheduler schedules one routine, nest by nest, with checked transforms only.
//
//   ScheduledRoutine scheduled = GpuScheduler(routine, options).run();

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

inline std::int64_t extent_of(const ir::For& f) { return f.end - f.begin; }

// A nest of at least this many times min_parallel iterations shares them out on a parallel
// chain shorter than min_parallel; an accumulation with at least this many times min_parallel
// steps per cell may be staged into partials.
constexpr std::int64_t kMuchWork = 16;

// The largest divisor of n that is at most `most` (1 when none above 1 is).
std::int64_t divisor_at_most(std::int64_t n, std::int64_t most);

// A device limit; 0 (unknown) does not limit.
inline std::int64_t limit_of(std::int64_t value) {
  return value > 0 ? value : std::numeric_limits<std::int64_t>::max();
}

// The loop `s` in `r` (nullptr when there is none).
const ir::For* loop_at(const ir::LoweredRoutine& r, ir::Symbol s);

// One way of mapping a nest's parallel chain onto the launch: the transforms and the extents of
// the Grid slots they make, innermost (slot 0) first.
struct Plan {
  std::vector<Transform> steps;
  std::vector<std::int64_t> grid_extents;
  std::int64_t parallel = 1;  // iterations the annotated loops share out
};

class GpuScheduler {
 public:
  GpuScheduler(const ir::LoweredRoutine& r, const GpuScheduleOptions& o);

  // Each top-level nest is scheduled in a routine of its own and spliced back: every decision
  // reads and every transform rewrites one nest only, and walking the whole routine for each of
  // them would cost time quadratic in its size (a GPT-2 124M training step has over a thousand
  // nests).
  ScheduledRoutine run();

 private:
  ScheduledRoutine run_nests();

  ir::LoweredRoutine routine_;
  const GpuScheduleOptions& options_;
  std::int64_t block_;
  /// The transforms that made routine_ from the input, in order (the tuner replays them).
  std::vector<Transform> applied_;

  // Takes `r`, made from routine_ by `steps`, as the routine.
  void commit(ir::LoweredRoutine r, const std::vector<Transform>& steps);

  // The routine and its transforms so far, to go back to where a plan is abandoned half-way.
  struct Checkpoint {
    ir::LoweredRoutine routine;
    std::size_t applied = 0;
  };
  Checkpoint checkpoint() const { return {routine_, applied_.size()}; }
  void restore(Checkpoint c) {
    routine_ = std::move(c.routine);
    applied_.resize(c.applied);
  }

  // A matmul-like nest as a tile the GPU runs blocked (gpu_tile_nest.h), else a row reduction
  // on blocks, else the launch plan.
  void tile_or_schedule_nest(ir::Symbol top);

  // Row reductions on blocks (gpu_row_reductions.cpp).

  // Cells over one long reduction each (`for cells: for r: d[cells] = max(d[cells], v(r))`: a
  // row's max or sum in a softmax, a cross-entropy or a layer norm), with fewer cells than the
  // device runs threads: one block per cell, whose threads each compute v(r) of one step (of
  // consecutive steps: coalesced reads along a row) and combine them in a block reduction
  // (ir/block_reduction.h), the reduction's slices of block size in order. One thread per cell
  // would leave most of the device idle while each walks its whole row. Max and min combine to
  // the serial loop's bits in any tree (maximumNumber orders every value, NaNs and signed zeros
  // included); a sum or product re-associates, so only with the licence and a longer reduction
  // (unless the cells are too few to share the nest out at all). A reduction over several loops
  // (partials added into a bias gradient: for c: for batch: for chunk) takes its longest loop
  // innermost, onto the threads, the others serial around it. `before_partials`: tried before
  // staged partials, so only one row loop whose blocks do not starve the device
  // (ir/kernel_cost.h).
  bool block_reduce_nest(ir::Symbol top, bool before_partials);

  // Whether the perfect nest under `top` ends in one accumulation with a loop its store's index
  // does not mention (a reduction).
  bool reduces_into_its_store(ir::Symbol top) const;

  std::optional<Plan> block_reduction_plan(const std::vector<ir::Symbol>& chain, bool before_partials) const;

  // The loops of the perfect nest under `cells` (the innermost cell loop), outermost first, when
  // they all are reductions (loops its store's index does not mention) starting at 0 and the
  // innermost's body is in the block-reduction form (`reduction`); else nothing.
  struct ReductionLoops {
    std::vector<const ir::For*> loops;
    ir::BlockReduction reduction;
  };
  std::optional<ReductionLoops> reduction_loops_below(ir::Symbol cells) const;

  // Whether every WorkgroupReduce loop of the nest under `top` in `r` is in the block-reduction
  // form (ir::block_reduction), which the GPU renders as a tree.
  static bool every_workgroup_reduce_is_a_tree(const ir::LoweredRoutine& r, ir::Symbol top);

  // Threads the device keeps resident (a fixed guess when it does not say how many units it has).
  std::int64_t resident_threads() const;

  // Nests gathered, split along K or staged into partials: each returns the new top-level nests
  // (gpu_staged_nests.cpp).

  // A scatter over sliding windows (a stride-1 convolution's input gradient) as the transposed
  // convolution, when its zero border grows the work at most kMaxGatherGrowth times (a licensed
  // re-association; schedule/window_nest.h): every cell of the gradient gets its updates from
  // one iteration of the cell loops, so the cells are the threads (or the rows and columns of a
  // tile, where the gather tiles like a forward convolution). Staged into partials instead
  // (below), the partials' sum into the gradient could share out only the batch and the
  // channels, each thread adding every window of its cells in order. Returns the new top-level
  // nests (the copy filling the zero-bordered operand, the gathered nest), or nothing.
  std::vector<ir::Symbol> gather_windows(ir::Symbol top);

  // A perfect nest under the top-level loop `top` ending in one add-accumulation d[idx] += v,
  // every loop serial: the loops (outermost first), the store, the loops idx mentions (the
  // cells) and the others (the reductions), with their products.
  struct AccumulationNest {
    ir::Symbol top;
    std::vector<const ir::For*> loops;
    const ir::Set* store = nullptr;
    std::vector<ir::Symbol> cell_loops;
    std::vector<const ir::For*> reductions;
    std::int64_t cells = 1, steps = 1;
  };
  std::optional<AccumulationNest> accumulation_nest(ir::Symbol top) const;

  // Split-K: a matmul-like nest (a weight gradient dw[i, j] += x[b, i] * dy[b, j] over the
  // tokens) whose tile would have too few blocks for the device even at the smallest blocking
  // (kSplitKBlockCells cells each; a tensor-core tile in its MMA blocks, which stay large),
  // over a long reduction: the reduction's outermost loop split into chunks (split_into_chunks;
  // a divisor, at most kMaxSplitKParts, each at least kMinSplitKChunk steps), or, where no
  // chunk count divides it, peeled first (peeled_split_k). Left to stage_partials where it has
  // few cells over many steps and stage_partials stages them. A licensed re-association; the
  // tile's threads each keep their register block.
  std::vector<ir::Symbol> split_k(ir::Symbol top);

  // The outermost reduction loop of `n` split into `parts` chunks (`parts` divides it), staged
  // into partials p[chunk, cells..] (a batched matmul: the chunks on the Grid around the tile)
  // and a second nest adding the chunks into each cell in order. Returns the new top-level
  // nests, or nothing (routine unchanged).
  std::vector<ir::Symbol> split_into_chunks(const AccumulationNest& n, std::int64_t parts);

  // Split-K over a reduction no chunk count divides (GPT-2's 50257-entry vocabulary in the LM
  // head's input gradient, 50257 = 29 x 1733): the outermost reduction loop of `n` swapped
  // outermost and partitioned into a head of a multiple of `parts` steps, split into exactly
  // `parts` chunks, and a tail of the last n % parts steps, a nest of its own that adds after
  // the head's chunks (the licensed re-association split-K already takes). Fewer parts are taken
  // where the chunks would be short or the tail over 1/kMinChunksPerPeeledTail of a chunk.
  // Returns the head's nests and the tail's, or nothing (routine unchanged).
  std::vector<ir::Symbol> peeled_split_k(const AccumulationNest& n, std::int64_t parts);

  // Cells per block that split-K counts the tile of `tiled` (a nest tile_gpu_nest made) in: its
  // MMA blocking's where it runs on tensor cores (ir::tensor_core_format), else the smallest
  // scalar blocking's.
  std::int64_t split_k_block_cells(const ir::LoweredRoutine& tiled) const;

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
  std::vector<ir::Symbol> stage_partials(ir::Symbol top);

  // How stage_partials stages the injective `n`: the split (if any) of the first reduction loop
  // not kept whole, the loops the partials keep (the cells first), how many partials a cell gets
  // (under 2: not staged) and the top of the nest after the split.
  struct PartialsPlan {
    std::vector<Transform> steps;
    std::vector<ir::Symbol> keep;
    std::int64_t parts = 1;
    ir::Symbol top;
  };
  static PartialsPlan partials_plan(const AccumulationNest& n);

  // An accumulation into fewer cells than kFewCellBlocks blocks of threads over at least
  // kMuchWork x min_parallel steps a cell: what stage_partials stages for its few cells.
  bool few_cells_over_many_steps(std::int64_t cells, std::int64_t steps) const;

  // `steps` applied (ending in a StagePartials of the nest `top`): the top-level nests it made,
  // in order; nothing (the routine unchanged) when a step is refused.
  std::vector<ir::Symbol> staged_tops(ir::Symbol top, const std::vector<Transform>& steps);

  // The launch plan (default_gpu.cpp).

  // The innermost loop of `chain` (a parallel chain, outermost first) split into vectors of
  // target.gpu_vector_bytes / 4 lanes, the lanes a Vectorized loop (ir::gpu_vector_loop: a
  // thread moves them as one 16-byte load or store), where its body is such a loop's and the
  // device still has a thread for each of its resident ones: the chain with the vectors' loop
  // in its place, or `chain` (routine unchanged).
  std::vector<ir::Symbol> vector_lanes(std::vector<ir::Symbol> chain);

  // The loops from `top` down, each the whole body of the one before, that may run in parallel
  // (proven independent, not choosing a scatter's row), outermost first.
  std::vector<ir::Symbol> parallel_chain(const ir::LoweredRoutine& r, ir::Symbol top) const;

  // `r` after the swaps, or nullopt when Swap refuses one. Swap alone may re-associate a
  // reduction: callers keep the result only when the moved loops are then proven independent.
  static std::optional<ir::LoweredRoutine> swapped(ir::LoweredRoutine r, const std::vector<Swap>& swaps);

  // A nest left serial keeps its loop order (the reorderings only serve the launch).
  void schedule_nest(ir::Symbol top);

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
  std::vector<ir::Symbol> cells_outward(ir::Symbol top, std::vector<ir::Symbol> chain);
  std::vector<ir::Symbol> cells_outward(ir::Symbol top, const std::vector<ir::Symbol>& chain, bool alone);

  // Whether every store's index mentions loop `s` (with `alone`: has an axis that is `s` alone,
  // times a nonzero coefficient, plus a constant).
  static bool is_cell_loop(const ir::For& top, ir::Symbol s, bool alone);

  // Adjacent swaps taking the perfect nest `nest` (outermost first) to `order`.
  static std::vector<Swap> swaps_to(const std::vector<const ir::For*>& nest, const std::vector<ir::Symbol>& order);

  static std::int64_t parallel_iterations(const ir::LoweredRoutine& r, const std::vector<ir::Symbol>& chain);

  // The chain with its innermost loop contiguous in a written node moved innermost, when the
  // whole reordered chain is then proven: two distinct iterations of a proven chain touch no
  // written cell in common (they differ first at some loop, which is proven independent with
  // the loops inside it free), so any order of them computes the same bits.
  std::vector<ir::Symbol> contiguous_innermost(const std::vector<ir::Symbol>& chain);

  // chain[0 .. w) Grid, chain[w] the threads; nullopt when the Grid slots do not fit.
  std::optional<Plan> plan_for(const std::vector<ir::Symbol>& chain, std::size_t w) const;

  // A thread loop shorter than half a block shares the block with the loop above it (threads
  // .y): that loop split so a block holds about block_size threads, its outer part the Grid.
  void second_thread_dimension(const ir::For& above, std::int64_t x, Plan& plan, std::size_t& grid_loops) const;

  // Scatters bucketed by target row (gpu_scatter_buckets.cpp).

  // The chain with a loop over buckets of target rows on top (BucketScatter of the nest at
  // `nest_top`) when each of its threads would walk a long scatter serially (an embedding
  // gradient: the token loop chooses the rows, which repeat, so only the channels were
  // threads). Each bucket's threads walk every token and update the rows of their bucket only:
  // the read-modify-writes spread over buckets x channels threads, bitwise the serial scatter.
  // Kept when the whole new chain is proven (the guards make the buckets' rows disjoint).
  std::vector<ir::Symbol> bucketed(ir::Symbol nest_top, const std::vector<ir::Symbol>& chain);
};

}  // namespace cannl::schedule::detail
