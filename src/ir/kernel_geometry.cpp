// Launch geometry of a GPU kernel (kernel_geometry.h): slots by position, extents by maximum.
#include "cannl/ir/kernel_geometry.h"

#include <algorithm>
#include <string>

#include "cannl/ir/block_reduction.h"
#include "cannl/support/error.h"

namespace cannl::ir {

namespace {

bool is_grid(AxisType a) { return a == AxisType::Grid; }
bool is_block(AxisType a) { return a == AxisType::Workgroup || a == AxisType::WorkgroupReduce; }

// Walks the kernel; returns, for the statement, how many Grid and block loops the deepest path
// under it holds (its "height" per kind), after recording the slots of the loops inside it.
struct Heights {
  int grid = 0, block = 0;
};

class GeometryWalker {
 public:
  explicit GeometryWalker(KernelGeometry& g) : g_(g) {}

  Heights walk(const StmtRef& s) {
    if (!s) return {};
    return std::visit([&](const auto& node) { return visit(node); }, s->node);
  }

 private:
  Heights visit(const Seq& s) {
    Heights h;
    for (const auto& c : s.stmts) {
      const Heights ch = walk(c);
      h.grid = std::max(h.grid, ch.grid);
      h.block = std::max(h.block, ch.block);
    }
    return h;
  }
  Heights visit(const If& s) { return walk(s.body); }
  Heights visit(const For& f) {
    Heights h = walk(f.body);
    const bool grid = is_grid(f.axis), block = is_block(f.axis);
    if (!grid && !block) return h;
    const int slot = grid ? h.grid : h.block;
    internal_check(slot < 3, [&] {
      return "kernel geometry: more than three " + std::string(grid ? "Grid" : "Workgroup") +
             " loops nest around one statement";
    });
    internal_check(f.begin == 0, "kernel geometry: annotated loop does not start at 0");
    auto& dims = grid ? g_.grid : g_.block;
    dims[static_cast<std::size_t>(slot)] = std::max(dims[static_cast<std::size_t>(slot)], f.end);
    g_.slot_of[f.index.id] = slot;
    if (f.axis == AxisType::WorkgroupReduce && block_reduction(f)) ++reductions_;
    (grid ? h.grid : h.block) = slot + 1;
    return h;
  }
  // A blocked tile is a launch of its own: its workgroups on Grid slot 0, its threads on
  // Workgroup slot 0, its staged slices in shared memory. Otherwise its fallback is what runs.
  Heights visit(const TileMma& t) {
    if (!t.blocking.blocked()) return walk(t.fallback);
    g_.grid[0] = std::max(g_.grid[0], t.blocks());
    g_.block[0] = std::max(g_.block[0], t.blocking.threads());
    tile_bytes_ += t.blocking.shared_bytes(static_cast<std::int64_t>(dtype_bytes(t.dtype)));
    return {1, 1};
  }
  template <typename Other>
  Heights visit(const Other&) {
    return {};
  }

  KernelGeometry& g_;
  std::int64_t reductions_ = 0;
  std::int64_t tile_bytes_ = 0;

 public:
  std::int64_t reductions() const { return reductions_; }
  std::int64_t tile_bytes() const { return tile_bytes_; }
};

}  // namespace

KernelGeometry kernel_geometry(const StmtRef& body) {
  KernelGeometry g;
  GeometryWalker walker(g);
  walker.walk(body);
  // Each rendered block reduction declares its own shared array (block_reduction.h).
  g.shared_bytes += walker.reductions() * block_reduction_bytes(g.threads_per_block()) + walker.tile_bytes();
  return g;
}

}  // namespace cannl::ir
