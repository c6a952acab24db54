// Scatters bucketed by target row: the default GPU schedule's loop over buckets of a scatter's
// rows on top of a chain whose threads would each walk a long scatter (BucketScatter; see
// GpuScheduler::bucketed, gpu_scheduler.h).
#include <algorithm>

#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/error.h"
#include "schedule/gpu_scheduler.h"
#include "schedule/loop_tree.h"
#include "schedule/parallel_loops.h"

namespace cannl::schedule::detail {

namespace {

// A scatter whose threads would each walk at least this many steps is bucketed by target row
// (BucketScatter); with `gpu_scatter_buckets=auto` into enough buckets that the launch has
// about this many threads per compute unit: half of what a recent NVIDIA multiprocessor keeps
// resident, enough warps to hide the latency of the row reads. Every bucket's thread still reads
// every row (the work per thread stays the scatter's length), so more buckets would only add
// compares; fewer leave each thread more of the read-modify-writes in a serial chain.
constexpr std::int64_t kLongScatter = 256;
constexpr std::int64_t kScatterThreadsPerUnit = 1024;

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

}  // namespace

std::vector<ir::Symbol> GpuScheduler::bucketed(ir::Symbol nest_top, const std::vector<ir::Symbol>& chain) {
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

}  // namespace cannl::schedule::detail
