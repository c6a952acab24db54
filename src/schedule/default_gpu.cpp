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
//
// The planners live beside this file, one concept each, on the GpuScheduler of gpu_scheduler.h:
// row reductions on blocks in gpu_row_reductions.cpp, gathered, split-K and staged nests in
// gpu_staged_nests.cpp, scatter buckets in gpu_scatter_buckets.cpp. This file holds the public
// API, the walk over the nests and the launch plan.
#include "cannl/schedule/default_gpu.h"

#include <algorithm>
#include <optional>

#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/legality.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "schedule/gpu_scheduler.h"
#include "schedule/gpu_tile_nest.h"
#include "schedule/loop_tree.h"
#include "schedule/parallel_loops.h"

namespace cannl::schedule {

namespace detail {

namespace {

std::int64_t clamped_block(const GpuScheduleOptions& o) {
  return std::max<std::int64_t>(1, std::min({o.block_size, limit_of(o.target.gpu.max_threads_per_block),
                                             limit_of(o.target.gpu.max_block_dims[0])}));
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

}  // namespace

std::int64_t divisor_at_most(std::int64_t n, std::int64_t most) {
  for (std::int64_t d = std::min(n, most); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

const ir::For* loop_at(const ir::LoweredRoutine& r, ir::Symbol s) {
  const auto site = detail::find_loop(r.body, s);
  return site ? site->loop : nullptr;
}

GpuScheduler::GpuScheduler(const ir::LoweredRoutine& r, const GpuScheduleOptions& o)
    : routine_(r), options_(o), block_(clamped_block(o)) {}

ScheduledRoutine GpuScheduler::run() {
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

ScheduledRoutine GpuScheduler::run_nests() {
  // The nests' tops first: each nest's transforms address its own loops only.
  std::vector<ir::Symbol> tops;
  for (const auto& s : flatten_seq(routine_.body))
    if (const auto* f = std::get_if<ir::For>(&s->node)) tops.push_back(f->index);
  for (const ir::Symbol top : tops) {
    std::vector<ir::Symbol> staged = options_.reassociate ? gather_windows(top) : std::vector<ir::Symbol>{};
    if (staged.empty() && options_.reassociate) staged = split_k(top);
    // Rows whose blocks fill the device are better reduced in place than staged: 64 rows of a
    // 50257-entry vocabulary take 197 steps a thread on blocks, 1733 as 29 partials a row.
    if (staged.empty() && options_.reassociate && block_reduce_nest(top, /*before_partials=*/true)) continue;
    if (staged.empty() && options_.reassociate) staged = stage_partials(top);
    if (staged.empty()) tile_or_schedule_nest(top);
    for (const ir::Symbol s : staged) tile_or_schedule_nest(s);
  }
  return {routine_, applied_};
}

void GpuScheduler::commit(ir::LoweredRoutine r, const std::vector<Transform>& steps) {
  routine_ = std::move(r);
  applied_.insert(applied_.end(), steps.begin(), steps.end());
}

void GpuScheduler::tile_or_schedule_nest(ir::Symbol top) {
  if (auto tiled = detail::tile_gpu_nest(routine_, top, options_)) {
    commit(std::move(tiled->routine), tiled->transforms);
    return;
  }
  if (block_reduce_nest(top, /*before_partials=*/false)) return;
  schedule_nest(top);
}

std::vector<ir::Symbol> GpuScheduler::parallel_chain(const ir::LoweredRoutine& r, ir::Symbol top) const {
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

std::optional<ir::LoweredRoutine> GpuScheduler::swapped(ir::LoweredRoutine r, const std::vector<Swap>& swaps) {
  for (const Swap& s : swaps) {
    try {
      r = schedule::apply(r, s);
    } catch (const ScheduleError&) {
      return std::nullopt;
    }
  }
  return r;
}

void GpuScheduler::schedule_nest(ir::Symbol top) {
  Checkpoint before = checkpoint();
  std::vector<ir::Symbol> chain = cells_outward(top, parallel_chain(routine_, top));
  if (!chain.empty()) chain = contiguous_innermost(chain);
  // The lanes leave at least min_parallel vectors, so the full chain's plan still shares the
  // nest out, and the shorter chains' plans do not see them.
  chain = vector_lanes(bucketed(chain.empty() ? top : chain.front(), chain));
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
  restore(std::move(before));
}

std::vector<ir::Symbol> GpuScheduler::cells_outward(ir::Symbol top, std::vector<ir::Symbol> chain) {
  for (const bool alone : {true, false}) chain = cells_outward(top, chain, alone);
  return chain;
}

std::vector<ir::Symbol> GpuScheduler::cells_outward(ir::Symbol top, const std::vector<ir::Symbol>& chain, bool alone) {
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

bool GpuScheduler::is_cell_loop(const ir::For& top, ir::Symbol s, bool alone) {
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

std::vector<Swap> GpuScheduler::swaps_to(const std::vector<const ir::For*>& nest,
                                         const std::vector<ir::Symbol>& order) {
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

std::int64_t GpuScheduler::parallel_iterations(const ir::LoweredRoutine& r, const std::vector<ir::Symbol>& chain) {
  std::int64_t n = 1;
  for (const ir::Symbol s : chain) n *= extent_of(*loop_at(r, s));
  return chain.empty() ? 0 : n;
}

std::vector<ir::Symbol> GpuScheduler::contiguous_innermost(const std::vector<ir::Symbol>& chain) {
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

std::vector<ir::Symbol> GpuScheduler::vector_lanes(std::vector<ir::Symbol> chain) {
  const std::int64_t lanes = options_.target.gpu_vector_bytes / 4;
  if (options_.vectors == GpuScheduleOptions::Vectors::Off || chain.empty() || lanes < 2) return chain;
  const ir::For& inner = *loop_at(routine_, chain.back());
  std::int64_t parallel = 1;
  for (const ir::Symbol s : chain) parallel *= extent_of(*loop_at(routine_, s));
  // Auto: a vector for every resident thread; On: enough vectors for the plan to share out.
  const std::int64_t vectors_wanted = options_.vectors == GpuScheduleOptions::Vectors::On
                                          ? options_.min_parallel
                                          : std::max(resident_threads(), options_.min_parallel);
  if (inner.begin != 0 || extent_of(inner) % lanes != 0 || parallel / lanes < vectors_wanted) return chain;
  const Split s = split(inner.index, lanes, ir::AxisType::Serial, ir::AxisType::Vectorized);
  try {
    ir::LoweredRoutine r = schedule::apply(routine_, s);
    const ir::For* vector = loop_at(r, s.inner);
    if (vector == nullptr || !ir::gpu_vector_loop(*vector, options_.target)) return chain;
    commit(std::move(r), {s});
  } catch (const ScheduleError&) {
    return chain;  // proven legal above; a refusal leaves the lanes to threads, never wrong
  }
  chain.back() = s.outer;
  return chain;
}

std::optional<Plan> GpuScheduler::plan_for(const std::vector<ir::Symbol>& chain, std::size_t w) const {
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

void GpuScheduler::second_thread_dimension(const ir::For& above, std::int64_t x, Plan& plan,
                                           std::size_t& grid_loops) const {
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

}  // namespace detail

using detail::GpuScheduler;

namespace {

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

GpuScheduleOptions::Vectors vectors_from_config() {
  using Vectors = GpuScheduleOptions::Vectors;
  return config::get_one_of<Vectors>("gpu_schedule_vectors",
                                     {{"auto", Vectors::Auto}, {"on", Vectors::On}, {"off", Vectors::Off}});
}

}  // namespace

GpuScheduleOptions GpuScheduleOptions::from_config(const ir::Target& target) {
  return {.target = target,
          .block_size = config::get_int_in("gpu_schedule_block_size", 1, 1 << 20),
          .min_parallel = config::get_int_in("gpu_schedule_min_parallel", 1, 1LL << 40),
          .reassociate = config::get_bool("gpu_schedule_reassociate"),
          .tiles = config::get_bool("gpu_schedule_tiles"),
          .scatter_buckets = scatter_buckets_from_config(),
          .split_k_blocks_per_unit = config::get_int_in("gpu_split_k_blocks_per_unit", 0, 1 << 20),
          .vectors = vectors_from_config()};
}

ScheduledRoutine plan_default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options) {
  return GpuScheduler(routine, options).run();
}

ir::LoweredRoutine default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options) {
  return plan_default_gpu_schedule(routine, options).routine;
}

}  // namespace cannl::schedule
