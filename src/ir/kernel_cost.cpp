// Static work per thread of a GPU kernel (kernel_cost.h).
#include "cannl/ir/kernel_cost.h"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <variant>

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
  std::int64_t steps_of(const For& f) const { return mul(iterations(f), steps(f.body)) + reduction_tree(f); }
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

std::int64_t KernelLoad::critical_steps() const { return mul(steps_per_thread, waves); }

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
  if (load.device_threads > 0) {
    load.waves = ceil_div(load.threads, load.device_threads);
    load.starves = load.device_share() < kStarvedDeviceShare && load.steps_per_thread >= kStarvedSteps;
  }
  return load;
}

std::int64_t kernel_steps_per_thread(const StmtRef& body, const KernelGeometry& geometry) {
  return std::max<std::int64_t>(1, StepCounter(geometry).steps(body));
}

}  // namespace cannl::ir
