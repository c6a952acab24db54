// Static work per thread of a GPU kernel (kernel_cost.h).
#include "cannl/ir/kernel_cost.h"

#include <algorithm>
#include <array>
#include <bit>
#include <type_traits>
#include <variant>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::ir {

namespace {

// Lanes of a Vectorized loop's 128-bit accesses (f32).
constexpr std::int64_t kVectorLanes = 4;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

// Saturating, so a pathological nest ranks last instead of wrapping around.
std::int64_t mul(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = std::int64_t{1} << 62;
  if (a == 0 || b == 0) return 0;
  return a > kMax / b ? kMax : a * b;
}

class StepCounter {
 public:
  explicit StepCounter(const KernelGeometry& g) : g_(g) {}

  std::int64_t steps(const StmtRef& s) const {
    return std::visit([&](const auto& n) { return steps_of(n); }, s->node);
  }

 private:
  std::int64_t steps_of(const Seq& q) const {
    std::int64_t total = 0;
    for (const auto& x : q.stmts) total = std::min(std::int64_t{1} << 62, total + steps(x));
    return total;
  }
  std::int64_t steps_of(const For& f) const {
    // A WorkgroupReduce loop the renderer cannot make a tree runs serially on the slot's first thread.
    if (f.axis == AxisType::WorkgroupReduce && !block_reduction(f)) {
      return mul(std::max<std::int64_t>(0, f.end - f.begin), steps(f.body));
    }
    return mul(iterations(f), steps(f.body)) + reduction_tree(f);
  }
  std::int64_t steps_of(const If& i) const { return steps(i.body); }
  std::int64_t steps_of(const ZeroOut& z) const {
    return ceil_div(z.node->num_elements(), g_.blocks() * g_.threads_per_block());
  }
  std::int64_t steps_of(const TileMma& t) const {
    return t.blocking.blocked() ? tile_steps_per_thread(t) : steps(t.fallback);
  }
  std::int64_t steps_of(const Set&) const { return 1; }
  std::int64_t steps_of(const SetLocal&) const { return 1; }
  std::int64_t steps_of(const SetDynamic&) const { return 1; }
  std::int64_t steps_of(const Barrier&) const { return 1; }
  std::int64_t steps_of(const Comment&) const { return 0; }
  std::int64_t steps_of(const DeclareLocal&) const { return 0; }

  // Iterations one thread runs of `f`: a loop bound to a slot shares its range over the slot's
  // launch extent.
  std::int64_t iterations(const For& f) const {
    const std::int64_t extent = std::max<std::int64_t>(0, f.end - f.begin);
    switch (f.axis) {
      case AxisType::Serial:
      case AxisType::Unrolled: return extent;
      case AxisType::Vectorized: return ceil_div(extent, kVectorLanes);
      case AxisType::Grid:
      case AxisType::Workgroup:
      case AxisType::WorkgroupReduce: return ceil_div(extent, launch_extent(f));
    }
    return extent;
  }
  std::int64_t launch_extent(const For& f) const {
    const auto slot = g_.slot_of.find(f.index.id);
    if (slot == g_.slot_of.end()) return 1;
    const auto& dims = f.axis == AxisType::Grid ? g_.grid : g_.block;
    return dims[static_cast<std::size_t>(slot->second)];
  }
  // A block reduction's combining tree: one step per halving.
  std::int64_t reduction_tree(const For& f) const {
    if (f.axis != AxisType::WorkgroupReduce) return 0;
    return std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(1, launch_extent(f))));
  }

  const KernelGeometry& g_;
};

// The threads of a kernel of geometry `g` that run `part`, one statement of its body: along
// each slot the largest extent of the part's loops bound to it (the printer guards the rest of
// the launch out), the whole launch extent along a slot the part binds no loop to. A tile binds
// the launch itself.
std::int64_t threads_running(const StmtRef& part, const KernelGeometry& g) {
  std::array<std::int64_t, 3> grid = {0, 0, 0}, block = {0, 0, 0};
  bool tile = false;
  for_each_stmt(part, [&](const Stmt& s) {
    tile = tile || std::holds_alternative<TileMma>(s.node);
    const auto* f = std::get_if<For>(&s.node);
    const auto slot = f ? g.slot_of.find(f->index.id) : g.slot_of.end();
    if (slot == g.slot_of.end()) return;
    auto& bound = (f->axis == AxisType::Grid ? grid : block)[static_cast<std::size_t>(slot->second)];
    bound = std::max(bound, f->end - f->begin);
  });
  std::int64_t threads = 1;
  for (std::size_t k = 0; k < 3; ++k) {
    threads = mul(threads, tile || grid[k] == 0 ? g.grid[k] : std::min(grid[k], g.grid[k]));
    threads = mul(threads, tile || block[k] == 0 ? g.block[k] : std::min(block[k], g.block[k]));
  }
  return threads;
}

}  // namespace

std::int64_t tile_steps_per_thread(const TileMma& tile) {
  const TileBlocking& b = tile.blocking;
  if (!b.blocked()) return 1;
  const std::int64_t threads = std::max<std::int64_t>(1, b.threads());
  const std::int64_t slices = ceil_div(tile.steps(), b.bk);
  const std::int64_t staged = ceil_div(std::int64_t{b.bm + b.bn} * b.bk, threads);
  const std::int64_t per_slice =
      b.tensor_cores() ? std::int64_t{b.tm / 16} * (b.tn / 8) * (b.bk / std::max(1, b.mma_steps()))
                       : std::int64_t{b.bk} * b.tm * b.tn;
  const std::int64_t epilogue = b.tensor_cores() ? ceil_div(std::int64_t{b.tm} * b.tn, TileBlocking::kWarpLanes)
                                                 : std::int64_t{b.tm} * b.tn;
  return mul(slices, staged + per_slice) + epilogue;
}

double KernelLoad::device_share() const {
  if (device_threads <= 0) return 0;
  return std::min(1.0, static_cast<double>(threads) / static_cast<double>(device_threads));
}

std::int64_t device_resident_threads(const GpuLimits& limits) {
  if (limits.compute_units <= 0) return 0;
  return limits.compute_units * (limits.warp_size >= 32 ? 2048 : std::max<std::int64_t>(1, limits.max_threads_per_block));
}

KernelLoad kernel_load(const StmtRef& body, const KernelGeometry& geometry, const GpuLimits& limits) {
  KernelLoad load;
  load.threads = geometry.blocks() * geometry.threads_per_block();
  load.steps_per_thread = kernel_steps_per_thread(body, geometry);
  load.device_threads = device_resident_threads(limits);
  load.waves = load.device_threads > 0 ? ceil_div(load.threads, load.device_threads) : 1;
  const StepCounter counter(geometry);
  std::int64_t critical = 0;
  for (const StmtRef& part : flatten_seq(body)) {
    const std::int64_t steps = counter.steps(part);
    if (steps == 0) continue;
    const std::int64_t threads = threads_running(part, geometry);
    const std::int64_t waves = load.device_threads > 0 ? ceil_div(threads, load.device_threads) : 1;
    critical = std::min(std::int64_t{1} << 62, critical + mul(steps, waves));
    const bool few = load.device_threads > 0 &&
                     static_cast<double>(threads) < kStarvedDeviceShare * static_cast<double>(load.device_threads);
    load.starves = load.starves || (few && steps >= kStarvedSteps);
  }
  load.critical_steps = std::max<std::int64_t>(1, critical);
  return load;
}

std::int64_t kernel_steps_per_thread(const StmtRef& body, const KernelGeometry& geometry) {
  return std::max<std::int64_t>(1, StepCounter(geometry).steps(body));
}

}  // namespace cannl::ir
