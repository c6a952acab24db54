// Row reductions on blocks: the default GPU schedule's plan for cells over one long reduction
// each (a softmax's row maximum, a layer norm's row sum), one block per cell whose threads
// combine the row in a block reduction (see GpuScheduler::block_reduce_nest, gpu_scheduler.h).
#include <algorithm>
#include <optional>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/kernel_cost.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/gpu_scheduler.h"
#include "schedule/gpu_tile_nest.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {

namespace {

// Row reductions on blocks (block_reduce_nest): at least this many steps (a licensed sum or
// product: this many), on blocks of at least this many threads, and on a device that does not
// say how many units it has, for fewer cells than this.
constexpr std::int64_t kBlockReductionSteps = 64;
constexpr std::int64_t kLicensedBlockReductionSteps = 256;
constexpr std::int64_t kMinBlockReductionThreads = 32;
constexpr std::int64_t kUnknownDeviceThreads = std::int64_t{1} << 16;

}  // namespace

bool GpuScheduler::block_reduce_nest(ir::Symbol top, bool before_partials) {
  if (!reduces_into_its_store(top)) return false;  // the cheap test before reordering the nest
  Checkpoint before = checkpoint();
  const std::vector<ir::Symbol> chain = cells_outward(top, parallel_chain(routine_, top));
  const std::optional<Plan> plan = block_reduction_plan(chain, before_partials);
  // Before staged partials a matmul keeps its way (partials where it has few cells, else a tile);
  // the costly tile test only for a nest that would otherwise be reduced on blocks.
  if (plan && !(before_partials && detail::tile_gpu_nest(before.routine, top, options_))) {
    try {
      ir::LoweredRoutine planned = schedule::apply(routine_, plan->steps);
      // Only where every WorkgroupReduce loop renders as a tree: one whose body the plan left in
      // another form (a guard already there, then the split's) would run on one thread a block.
      if (every_workgroup_reduce_is_a_tree(planned, top)) {
        commit(std::move(planned), plan->steps);
        return true;
      }
    } catch (const ScheduleError&) {
      // proven legal above; a refusal falls back to the launch plan, never wrong
    }
  }
  restore(std::move(before));
  return false;
}

bool GpuScheduler::reduces_into_its_store(ir::Symbol top) const {
  const ir::For* f = loop_at(routine_, top);
  if (f == nullptr) return false;
  ir::StmtRef leaf;
  const std::vector<const ir::For*> nest = detail::perfect_nest(*f, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  if (store == nullptr || !detail::accumulation_op(store->node, store->index, store->value)) return false;
  return std::any_of(nest.begin(), nest.end(), [&](const ir::For* g) { return !ir::mentions(store->index, g->index); });
}

std::optional<GpuScheduler::ReductionLoops> GpuScheduler::reduction_loops_below(ir::Symbol cells) const {
  ReductionLoops out;
  auto body = flatten_seq(loop_at(routine_, cells)->body);
  while (body.size() == 1 && std::holds_alternative<ir::For>(body[0]->node)) {
    const ir::For& f = std::get<ir::For>(body[0]->node);
    if (f.axis != ir::AxisType::Serial || f.begin != 0) return std::nullopt;
    out.loops.push_back(&f);
    body = flatten_seq(f.body);
  }
  std::optional<ir::BlockReduction> reduction = out.loops.empty() ? std::nullopt : ir::block_reduction(*out.loops.back());
  if (!reduction) return std::nullopt;
  for (const ir::For* f : out.loops)
    if (ir::mentions(reduction->index, f->index)) return std::nullopt;
  out.reduction = std::move(*reduction);
  return out;
}

std::optional<Plan> GpuScheduler::block_reduction_plan(const std::vector<ir::Symbol>& chain, bool before_partials) const {
  if (chain.empty() || chain.size() > 3) return std::nullopt;
  const std::optional<ReductionLoops> found = reduction_loops_below(chain.back());
  if (!found) return std::nullopt;
  const std::vector<const ir::For*>& loops = found->loops;
  // Before staged partials only single rows whose blocks fill the device (below): over several
  // loops the threads are one of them (a convolution's weight gradient: 64 images a cell, each
  // thread walking 784 steps), where partials spread all the steps.
  if (before_partials && loops.size() > 1) return std::nullopt;
  const ir::For* r = loops.back();  // the longest, the innermost of equals
  for (const ir::For* f : loops)
    if (extent_of(*f) > extent_of(*r)) r = f;
  const bool bitwise = found->reduction.accum == ir::Op::Max || found->reduction.accum == ir::Op::Min;
  std::int64_t steps = 1;
  for (const ir::For* f : loops) steps *= extent_of(*f);
  const std::int64_t cells = parallel_iterations(routine_, chain);
  // A licensed sum needs a long row, or so few cells that the nest would share out no threads
  // (a bias gradient's 10 cells over a batch of 64, partials added into their cells).
  const bool long_enough = steps >= (bitwise || cells < options_.min_parallel ? kBlockReductionSteps
                                                                              : kLicensedBlockReductionSteps);
  if (!long_enough || !(bitwise || options_.reassociate) || cells >= resident_threads()) return std::nullopt;
  // Slices of a divisor of the row when one fills at least half a block, else of a whole block
  // with the last slice guarded (a vocabulary of 50257 = 29 x 1733 entries).
  const std::int64_t row = extent_of(*r);
  std::int64_t threads = row <= block_ ? row : divisor_at_most(row, block_);
  if (2 * threads < block_) threads = std::min(row, block_);
  if (threads < kMinBlockReductionThreads) return std::nullopt;
  const double share = static_cast<double>(cells * threads) / static_cast<double>(resident_threads());
  if (before_partials && share < ir::kStarvedDeviceShare) return std::nullopt;
  Plan plan;
  // The longest reduction loop innermost (a re-association only where the sum is licensed:
  // max and min give the same bits in any order), split into slices of the block's threads (the
  // split's guard innermost), its threads' loop then moved outermost of the reduction loops: each
  // thread folds its steps of every slice and of the other loops in registers, and the block
  // combines the partials in one tree per cell (a tree per slice cost ten times the row's steps
  // over GPT-2's vocabulary: 197 slices of 256).
  // A row the block takes whole needs no split, and its loop goes straight outermost.
  const auto r_at = std::find(loops.begin(), loops.end(), r);
  std::vector<ir::Symbol> above;  // the reduction loops the threads' loop ends up outside of, outermost first
  for (auto f = loops.begin(); f != (threads < row ? loops.end() : r_at); ++f)
    if (*f != r) above.push_back((*f)->index);
  ir::Symbol threads_loop = r->index;
  if (threads < row) {
    for (auto below = r_at + 1; below != loops.end(); ++below) plan.steps.push_back(Swap{r->index, (*below)->index});
    const Split s = split(r->index, threads);
    plan.steps.push_back(s);
    above.push_back(s.outer);
    threads_loop = s.inner;
  }
  for (auto outer = above.rbegin(); outer != above.rend(); ++outer) plan.steps.push_back(Swap{*outer, threads_loop});
  plan.steps.push_back(Retype{threads_loop, ir::AxisType::WorkgroupReduce});
  for (std::size_t m = chain.size(); m-- > 0;) {
    const std::size_t slot = chain.size() - 1 - m;
    if (extent_of(*loop_at(routine_, chain[m])) > limit_of(options_.target.gpu.max_grid_dims[slot])) return std::nullopt;
    plan.steps.push_back(Retype{chain[m], ir::AxisType::Grid});
  }
  return plan;
}

bool GpuScheduler::every_workgroup_reduce_is_a_tree(const ir::LoweredRoutine& r, ir::Symbol top) {
  const ir::For* nest = loop_at(r, top);
  if (nest == nullptr) return false;
  bool trees = true;
  ir::for_each_stmt(nest->body, [&](const ir::Stmt& s) {
    const auto* f = std::get_if<ir::For>(&s.node);
    if (f != nullptr && f->axis == ir::AxisType::WorkgroupReduce) trees = trees && ir::block_reduction(*f).has_value();
  });
  return trees;
}

std::int64_t GpuScheduler::resident_threads() const {
  const std::int64_t known = ir::device_resident_threads(options_.target.gpu);
  return known > 0 ? known : kUnknownDeviceThreads;
}

}  // namespace cannl::schedule::detail
