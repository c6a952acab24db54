// Strided matrix-vector products (see gemv_nest.h).
#include "schedule/gemv_nest.h"

#include "cannl/ir/target.h"
#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"

namespace cannl::schedule::detail {
namespace {

// Chunks of the cell loop: enough cells for the vector loop and long contiguous runs of each
// matrix row (DRAM streams), few enough that the chunk's accumulators (64 KiB of f32 at most)
// stay in the L2 cache across the steps.
constexpr std::int64_t kMinChunk = 256;
constexpr std::int64_t kMaxChunk = 16384;
constexpr std::int64_t kLongChunk = 4096;  // preferred: row runs of 16 KiB and more
// An extent without such a divisor (a vocabulary of 50257 = 29 x 1733) is partitioned first at
// a multiple of this: a head with one, and a short tail left plain.
constexpr std::int64_t kHeadMultiple = 64;
constexpr std::int64_t kMinSteps = 16;

// The chunk: the largest divisor of the extent in [kMinChunk, kMaxChunk] leaving at least
// kMinChunks chunks for the threads; 0 when there is none.
constexpr std::int64_t kMinChunks = 4;

std::int64_t chunk_of(std::int64_t extent, std::int64_t least = kMinChunk) {
  for (std::int64_t c = std::min(kMaxChunk, extent / kMinChunks); c >= least; --c)
    if (extent % c == 0) return c;
  return 0;
}

// Whether some matrix (a read moving with both loops) runs contiguously along c, and whether
// one runs along r (a dot product per cell: the interleaved Split_reduce's case).
void scan_reads(const ir::ScalarRef& v, ir::Symbol c, ir::Symbol r, bool& along_c, bool& along_r) {
  if (const auto* g = std::get_if<ir::Get>(&v->node)) {
    if (!ir::mentions(g->index, r) || !ir::mentions(g->index, c)) return;
    if (ir::contiguous_in(g->index, r)) along_r = true;
    else if (ir::contiguous_in(g->index, c)) along_c = true;
    return;
  }
  if (const auto* a = std::get_if<ir::Apply>(&v->node))
    for (const auto& x : a->args) scan_reads(x, c, r, along_c, along_r);
}

}  // namespace

std::optional<std::vector<Transform>> plan_strided_gemv(const ir::For& top) {
  ir::StmtRef leaf;
  const std::vector<const ir::For*> loops = perfect_nest(top, leaf);
  if (loops.size() != 2 || !leaf) return std::nullopt;
  const ir::For& c = *loops[0];
  const ir::For& r = *loops[1];
  const auto* store = std::get_if<ir::Set>(&leaf->node);
  if (!store || c.axis != ir::AxisType::Serial || r.axis != ir::AxisType::Serial || c.begin != 0 ||
      store->node->dtype != ir::DType::F32 || r.end - r.begin < kMinSteps)
    return std::nullopt;
  if (accumulation_op(store->node, store->index, store->value) != ir::Op::Add || ir::mentions(store->index, r.index) ||
      !ir::contiguous_in(store->index, c.index))
    return std::nullopt;
  bool along_c = false, along_r = false;
  scan_reads(store->value, c.index, r.index, along_c, along_r);
  if (!along_c || along_r) return std::nullopt;
  const auto chunked = [&](std::int64_t chunk) {
    const Split s = split(c.index, chunk);
    return std::vector<Transform>{s, Swap{s.inner, r.index}};
  };
  // Long chunks first: of the whole extent, else of a head; else any the extent has.
  if (const std::int64_t chunk = chunk_of(c.end, kLongChunk); chunk > 0) return chunked(chunk);
  for (std::int64_t head = c.end - c.end % kHeadMultiple; head >= kMinChunks * kLongChunk; head -= kHeadMultiple)
    if (head < c.end && chunk_of(head, kLongChunk) > 0) return std::vector<Transform>{partition(c, {head})};
  if (const std::int64_t chunk = chunk_of(c.end); chunk > 0) return chunked(chunk);
  return std::nullopt;
}

}  // namespace cannl::schedule::detail
