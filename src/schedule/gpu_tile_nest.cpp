// Matmul-like nests as GPU tiles (see gpu_tile_nest.h).
#include "schedule/gpu_tile_nest.h"

#include <algorithm>

#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/error.h"
#include "schedule/loop_tree.h"
#include "schedule/matmul_nest.h"
#include "schedule/parallel_loops.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// A block of fewer threads than this leaves most of a multiprocessor idle; the plain schedule
// (a thread per cell) shares such skinny nests (matrix-vector products) out better.
constexpr std::int64_t kMinTileThreads = 32;

// The three innermost loops of the nest under `top` as a matmul (in any order), or nullopt.
std::optional<Tensorize> innermost_matmul(const ir::For& top) {
  const auto nest = serial_store_nest(top, 3);
  if (!nest) return std::nullopt;
  const auto& loops = nest->loops;
  const ir::Symbol s[3] = {loops[loops.size() - 3]->index, loops[loops.size() - 2]->index, loops.back()->index};
  for (int p : {0, 1, 2})
    for (int q : {0, 1, 2}) {
      if (p == q) continue;
      const Tensorize t{s[p], s[q], s[3 - p - q]};
      if (match_update(*nest->store, t)) return t;
    }
  return std::nullopt;
}

// The CPU planner's cost model (matmul_nest.h) judges a tile by the register panels of the
// target's micro-kernel: on a GPU a panel is one workgroup's block of bm x bn cells (its staging
// the packing, its threads the compute).
ir::Target planning_target(const ir::Target& gpu) {
  ir::Target t = gpu;
  t.gemm = {gpu.gpu_tile.bm, 1, 0, 0, 0};
  t.vector_bytes = 4 * gpu.gpu_tile.bn;
  return t;
}

// `r` after `steps` (which end in the Tensorize of the nest at top-level position `at`), with the
// loops left around the tile retyped Grid (and the retypes appended to the steps); nullopt when a step is refused, the target would not
// block the tile, its block is too small, or the loops around it cannot be the Grid.
std::optional<ScheduledRoutine> tiled(const ir::LoweredRoutine& r, std::size_t at, std::vector<Transform> steps,
                                      const GpuScheduleOptions& o) {
  ir::LoweredRoutine out;
  try {
    out = schedule::apply(r, steps);
  } catch (const ScheduleError&) {
    return std::nullopt;
  }
  const std::vector<ir::StmtRef> tops = flatten_seq(out.body);
  if (at >= tops.size()) return std::nullopt;
  std::vector<const ir::For*> around;  // outermost first
  ir::StmtRef s = tops[at];
  while (const auto* f = std::get_if<ir::For>(&s->node)) {
    around.push_back(f);
    const auto body = flatten_seq(f->body);
    if (body.size() != 1) return std::nullopt;
    s = body.front();
  }
  const auto* tile = std::get_if<ir::TileMma>(&s->node);
  // The tile takes Grid slot 0; the loops around it slots 1 and 2, innermost first.
  if (tile == nullptr || around.size() > 2 || !ir::runs_as_gpu_tile(*tile, o.target)) return std::nullopt;
  if (ir::fitted_blocking(o.target.gpu_tile, tile->rows(), tile->cols(), tile->steps()).threads() < kMinTileThreads)
    return std::nullopt;
  std::vector<Transform> grid;
  for (std::size_t m = 0; m < around.size(); ++m) {
    const ir::For& f = *around[m];
    const auto slot = static_cast<std::size_t>(around.size() - m);
    const std::int64_t limit = o.target.gpu.max_grid_dims[slot];
    if (!provably_parallel(out, f, 1) || (limit > 0 && f.end - f.begin > limit)) return std::nullopt;
    grid.push_back(Retype{f.index, ir::AxisType::Grid});
  }
  try {
    out = schedule::apply(out, grid);
  } catch (const ScheduleError&) {
    return std::nullopt;
  }
  steps.insert(steps.end(), grid.begin(), grid.end());
  return ScheduledRoutine{std::move(out), std::move(steps)};
}

}  // namespace

std::optional<ScheduledRoutine> tile_gpu_nest(const ir::LoweredRoutine& r, ir::Symbol top,
                                              const GpuScheduleOptions& options) {
  if (!options.tiles || !options.target.gpu_tile.valid()) return std::nullopt;
  const std::vector<ir::StmtRef> tops = flatten_seq(r.body);
  const auto at = std::find_if(tops.begin(), tops.end(), [&](const ir::StmtRef& s) {
    const auto* f = std::get_if<ir::For>(&s->node);
    return f != nullptr && f->index == top;
  });
  if (at == tops.end()) return std::nullopt;
  const auto position = static_cast<std::size_t>(at - tops.begin());
  const ir::For& nest = std::get<ir::For>((*at)->node);
  if (const auto t = innermost_matmul(nest))
    if (auto out = tiled(r, position, {*t}, options)) return out;
  const auto plan = plan_matmul_nest(nest, options.target.min_tile_work, options.reassociate,
                                     planning_target(options.target));
  if (!plan) return std::nullopt;
  std::vector<Transform> steps(plan->swaps.begin(), plan->swaps.end());
  steps.push_back(plan->tile);
  return tiled(r, position, steps, options);
}

}  // namespace cannl::schedule::detail
