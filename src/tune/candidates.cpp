// The tuner's seeds and menu (see candidates.h).
#include "tune/candidates.h"

#include <algorithm>
#include <array>
#include <set>
#include <thread>

#include "cannl/schedule/default_cpu.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/trace.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "tune/target_fields.h"

namespace cannl::tune {

namespace {

/// One loop of a scheduled routine, outside tiles (a tile's fallback is the renderer's business).
struct LoopInfo {
  ir::Symbol index;
  std::int64_t begin = 0, end = 0;
  ir::AxisType axis = ir::AxisType::Serial;
  int depth = 0;              // loops around it
  bool innermost = true;      // no loop inside
  bool under_parallel = false;  // inside a Grid or Vectorized loop
  std::optional<ir::Symbol> only_child;  // the loop that is its whole body (a perfect pair)
  std::vector<const ir::Set*> stores;    // stores directly in its body (not in inner loops)
  std::vector<ir::NodeRef> reads;        // nodes read anywhere inside it
  std::int64_t trips = 0;                // iterations of its body: its extent times its outer loops'
  std::int64_t extent() const { return end - begin; }
};

struct Features {
  std::vector<LoopInfo> loops;  // outermost first (preorder)
  bool has_tile = false;
  bool has_grid = false;
  /// A tile whose operands are both rounded to one narrow format (a tensor-core candidate).
  bool narrow_tile = false;
  /// The largest rows, columns and steps of a tile: a cache block at least this large is the
  /// whole extent, whatever its size.
  std::int64_t tile_rows = 0, tile_cols = 0, tile_steps = 0;
  /// Every tile's rows, columns and steps (what a GPU blocking is fitted to).
  std::set<std::array<std::int64_t, 3>> tile_shapes;
};

class LoopWalker {
 public:
  Features features;

  void stmt(const ir::StmtRef& s, int depth, bool under_parallel, std::vector<std::size_t>& open) {
    if (!s) return;
    if (const auto* seq = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& c : seq->stmts) stmt(c, depth, under_parallel, open);
    } else if (const auto* f = std::get_if<ir::For>(&s->node)) {
      if (!open.empty()) features.loops[open.back()].innermost = false;
      if (f->axis == ir::AxisType::Grid) features.has_grid = true;
      const std::int64_t outer = open.empty() ? 1 : features.loops[open.back()].trips;
      LoopInfo info{f->index, f->begin, f->end, f->axis, depth, true, under_parallel, only_child(f->body), {}, {},
                    outer * std::max<std::int64_t>(1, f->end - f->begin)};
      const std::size_t me = features.loops.size();
      features.loops.push_back(info);
      open.push_back(me);
      const bool parallel = under_parallel || f->axis == ir::AxisType::Grid || f->axis == ir::AxisType::Vectorized;
      stmt(f->body, depth + 1, parallel, open);
      open.pop_back();
      collect_reads(f->body, me);
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      stmt(i->body, depth, under_parallel, open);
    } else if (const auto* set = std::get_if<ir::Set>(&s->node)) {
      if (!open.empty()) features.loops[open.back()].stores.push_back(set);
    } else if (const auto* t = std::get_if<ir::TileMma>(&s->node)) {
      features.has_tile = true;
      features.tile_rows = std::max(features.tile_rows, t->rows());
      features.tile_cols = std::max(features.tile_cols, t->cols());
      features.tile_steps = std::max(features.tile_steps, t->steps());
      features.tile_shapes.insert({t->rows(), t->cols(), t->steps()});
      const ir::NarrowFormat f = t->a.node->rounded_to;
      features.narrow_tile = features.narrow_tile || (f != ir::NarrowFormat::None && t->b.node->rounded_to == f);
      if (!open.empty()) features.loops[open.back()].innermost = false;
    }
  }

 private:
  static std::optional<ir::Symbol> only_child(const ir::StmtRef& body) {
    ir::StmtRef s = body;
    while (s) {
      if (const auto* seq = std::get_if<ir::Seq>(&s->node)) {
        if (seq->stmts.size() != 1) return std::nullopt;
        s = seq->stmts.front();
      } else if (const auto* f = std::get_if<ir::For>(&s->node)) {
        return f->index;
      } else {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  void collect_reads(const ir::StmtRef& body, std::size_t loop) {
    auto& reads = features.loops[loop].reads;
    std::set<int> seen;
    for (const auto& n : ir::nodes_of(body))
      if (seen.insert(n->id).second) reads.push_back(n);
  }
};

Features features_of(const ir::LoweredRoutine& scheduled) {
  LoopWalker w;
  std::vector<std::size_t> open;
  w.stmt(scheduled.body, 0, false, open);
  return w.features;
}

int team_limit(const ir::Target& base) {
  if (base.threads > 0) return base.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Register tiles that fit the vector register file besides the B vectors and a broadcast A
/// (32 registers with 64-byte vectors, 16 otherwise), other than the target's own. The kernel
/// library packs panels of MR, NR, MR * NV (the narrow tile's rows) and one vector of rows by
/// cases of one switch, so those four must differ.
std::vector<std::pair<int, int>> register_tiles(const ir::Target& t) {
  std::vector<std::pair<int, int>> shapes = t.vector_bytes == 64
                                                ? std::vector<std::pair<int, int>>{{12, 2}, {8, 3}, {6, 4}, {14, 2}, {10, 2}}
                                                : std::vector<std::pair<int, int>>{{6, 2}, {4, 3}, {5, 2}};
  const int lanes = t.vector_lanes();
  std::erase_if(shapes, [&](const auto& s) {
    const auto [mr, nv] = s;
    const std::set<int> panel_rows{mr, nv * lanes, mr * nv, lanes};
    return (mr == t.gemm.mr && nv == t.gemm.nv) || panel_rows.size() != 4;
  });
  return shapes;
}

/// The one-field variants of `t` worth measuring for a routine with these features, each with
/// what it changed.
std::vector<std::pair<std::string, ir::Target>> target_variants(const ir::Target& t, const Features& f,
                                                                bool include_threshold) {
  std::vector<std::pair<std::string, ir::Target>> out;
  auto add = [&](const std::string& what, ir::Target v) {
    if (!(v == t)) out.emplace_back(what, std::move(v));
  };
  if (t.parallel_runtime && (f.has_grid || f.has_tile)) {
    const int limit = team_limit(t);
    for (int th = 1; th <= limit; ++th) {
      if (th == t.threads || (t.threads == 0 && th == limit)) continue;
      ir::Target v = t;
      v.threads = th;
      add("threads " + std::to_string(th), v);
    }
  }
  if (t.parallel_runtime && f.has_grid) {
    const std::int64_t team = t.threads > 0 ? t.threads : team_limit(t);
    for (std::int64_t chunks : {team, 2 * team, 16 * team}) {
      ir::Target v = t;
      v.grid_chunks = chunks;
      add("chunks " + std::to_string(chunks), v);
    }
  }
  if (f.has_tile && t.vector_bytes > 0 && t.gemm.mr > 0) {
    for (const auto& [mr, nv] : register_tiles(t)) {
      ir::Target v = t;
      v.gemm.mr = mr;
      v.gemm.nv = nv;
      add("gemm " + std::to_string(mr) + "x" + std::to_string(nv), v);
    }
    // A block no smaller than every tile's extent covers it whole: changing it changes nothing.
    auto same_cover = [](std::int64_t a, std::int64_t b, std::int64_t extent) { return a >= extent && b >= extent; };
    for (int kc : {t.gemm.kc / 2, t.gemm.kc * 2}) {
      if (kc < 64 || kc > 2048 || same_cover(kc, t.gemm.kc, f.tile_steps)) continue;
      ir::Target v = t;
      v.gemm.kc = kc;
      add("kc " + std::to_string(kc), v);
    }
    for (int nc : {t.gemm.nc / 2, t.gemm.nc * 2}) {
      if (nc < 64 || nc > 8192 || same_cover(nc, t.gemm.nc, f.tile_cols)) continue;
      ir::Target v = t;
      v.gemm.nc = nc;
      add("nc " + std::to_string(nc), v);
    }
    for (int mc : {t.gemm.mc / 4, t.gemm.mc * 2}) {
      if (mc < 64 || mc > 16384 || same_cover(mc, t.gemm.mc, f.tile_rows)) continue;
      ir::Target v = t;
      v.gemm.mc = mc;
      add("mc " + std::to_string(mc), v);
    }
  }
  if (f.has_tile && t.workgroups && t.gpu_tile.blocked()) {
    // The final lowering round fits a blocking to each tile: sketches that fit every tile of the
    // routine alike (to each other or to the target's own) build the same code, measured once.
    const auto fitted = [&](const ir::TileBlocking& b) {
      ir::Target v = t;
      v.gpu_tile = b;
      std::vector<ir::TileBlocking> out;
      for (const auto& [rows, cols, steps] : f.tile_shapes) out.push_back(ir::blocking_for_tile(v, rows, cols, steps));
      return out;
    };
    std::set<std::vector<std::array<int, 5>>> seen;
    const auto key = [&](const ir::TileBlocking& b) {
      std::vector<std::array<int, 5>> k;
      for (const ir::TileBlocking& x : fitted(b)) k.push_back({x.bm, x.bn, x.bk, x.tm, x.tn});
      return k;
    };
    seen.insert(key(t.gpu_tile));
    for (const ir::TileBlocking& b : gpu_tile_sketches(t)) {
      if (!seen.insert(key(b)).second) continue;
      ir::Target v = t;
      v.gpu_tile = b;
      add("gpu_tile " + describe_blocking(b), v);
    }
  }
  if (f.narrow_tile && t.workgroups && !t.gpu_mma_formats.empty() && t.gpu_mma_tile.blocked()) {
    for (const ir::TileBlocking& b : gpu_mma_sketches(t)) {
      ir::Target v = t;
      v.gpu_mma_tile = b;
      add("gpu_mma " + describe_blocking(b, "warp"), v);
    }
  }
  if (include_threshold && t.vector_bytes > 0 && t.gemm.mr > 0) {
    for (std::int64_t w : {t.min_tile_work / 8, t.min_tile_work * 8}) {
      if (w < 1) continue;
      ir::Target v = t;
      v.min_tile_work = w;
      add("min_tile_work " + std::to_string(w), v);
    }
  }
  return out;
}

ir::LoweredRoutine scheduled_or_input(const ir::LoweredRoutine& optimized, const schedule::ScheduleTrace& trace) {
  try {
    return schedule::replay(optimized, trace);
  } catch (const ScheduleError&) {
    return optimized;  // the search reports it when it compiles the candidate
  }
}

/// The moves on one loop.
std::vector<schedule::Transform> moves_of(const LoopInfo& loop, const ir::Target& target) {
  std::vector<schedule::Transform> out;
  if (loop.axis != ir::AxisType::Serial) return out;
  const std::int64_t lanes = std::max(1, target.vector_lanes());
  const bool licensed = config::get_bool(reassociation_licence_key(target));
  const std::int64_t n = loop.extent();
  if (loop.innermost) {
    if (n >= 2 && n <= 16) out.push_back(schedule::Unroll{loop.index, false});
    if (target.vector_bytes > 0 && n >= lanes && !loop.under_parallel)
      out.push_back(schedule::Retype{loop.index, ir::AxisType::Vectorized});
    if (target.vector_bytes > 0 && loop.begin == 0 && n > lanes && n % lanes == 0)
      out.push_back(schedule::split(loop.index, lanes, ir::AxisType::Serial, ir::AxisType::Vectorized));
    for (const ir::Set* store : loop.stores)
      if (!ir::mentions(store->index, loop.index)) {
        out.push_back(schedule::Privatize{store->node->id, loop.index});
        if (licensed && loop.begin == 0 && n >= 8 * lanes && target.vector_bytes > 0)
          out.push_back(schedule::split_reduce_lanes(loop.index, 4 * lanes, ir::AxisType::Vectorized));
      }
  }
  if (loop.depth == 0 && !loop.under_parallel && n >= 2 && target.parallel_runtime)
    out.push_back(schedule::Retype{loop.index, ir::AxisType::Grid});
  if (loop.only_child) out.push_back(schedule::Swap{loop.index, *loop.only_child});
  if (!loop.innermost && loop.depth <= 1)
    for (std::size_t r = 0; r < loop.reads.size() && r < 2; ++r) {
      out.push_back(schedule::Stage{loop.reads[r]->id, loop.index});
      // Packing once out of the routine, side by side with packing per call, only for constant
      // operands (literals, link-time data): their packing is paid once in real use too, while an
      // operand uploaded before every call would repack every call, which timing repeated calls
      // on the same inputs cannot see.
      const ir::TensorNode& source = *loop.reads[r];
      if (source.host_constant || source.host_init) out.push_back(schedule::Stage{source.id, loop.index, true});
    }
  return out;
}

/// Transform proposals on the scheduled routine (the legality oracle decides later), those on
/// the loops whose bodies run most often first: where the time goes, without profiling.
std::vector<schedule::Transform> transform_moves(const Features& f, const ir::Target& target) {
  std::vector<std::pair<std::int64_t, schedule::Transform>> moves;
  for (const auto& loop : f.loops) {
    for (auto& t : moves_of(loop, target)) moves.emplace_back(loop.trips, std::move(t));
  }
  std::stable_sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<schedule::Transform> out;
  for (auto& [trips, t] : moves) out.push_back(std::move(t));
  return out;
}

}  // namespace

std::vector<ir::TileBlocking> gpu_tile_sketches(const ir::Target& target) {
  // {bm, bn, bk, tm, tn}: each a workgroup of (bm / tm) x (bn / tn) threads.
  static const ir::TileBlocking kSketches[] = {
      {32, 32, 16, 2, 2},  {32, 64, 16, 2, 4},  {64, 64, 8, 4, 4},    {64, 64, 16, 4, 4},  {64, 64, 32, 4, 4},
      {128, 64, 8, 8, 4},  {64, 128, 8, 4, 8},  {128, 128, 8, 8, 8},  {128, 128, 16, 8, 8},
  };
  std::vector<ir::TileBlocking> out;
  for (const ir::TileBlocking& b : kSketches)
    if (!(b == target.gpu_tile) && b.valid() && ir::fits_device(b, target.gpu)) out.push_back(b);
  return out;
}

std::vector<ir::TileBlocking> gpu_mma_sketches(const ir::Target& target) {
  // {bm, bn, bk, wm, wn}: (bm / wm) x (bn / wn) warps, each a wm x wn set of 16 x 8 MMA tiles.
  static const ir::TileBlocking kSketches[] = {
      {64, 64, 32, 32, 32},   {128, 64, 32, 64, 32},  {64, 128, 32, 32, 64},  {128, 128, 32, 64, 32},
      {128, 128, 32, 32, 64}, {128, 128, 64, 64, 32}, {256, 128, 32, 64, 64}, {128, 256, 32, 64, 64},
  };
  std::vector<ir::TileBlocking> out;
  for (ir::TileBlocking b : kSketches) {
    if (b == target.gpu_mma_tile) continue;
    ir::TileBlocking strictest = b, widest = b;
    strictest.mma = ir::NarrowFormat::BF16;  // 16-step MMAs
    widest.mma = ir::NarrowFormat::TF32;     // 4-byte staged elements
    if (strictest.valid() && ir::fits_device(widest, target.gpu)) out.push_back(b);
  }
  return out;
}

schedule::ScheduleTrace default_trace(const ir::LoweredRoutine& optimized, const ir::Target& target) {
  if (target.workgroups) {
    if (!config::get_bool("automatic_gpu_schedule")) return schedule::record(optimized, {});
    const auto options = schedule::GpuScheduleOptions::from_config(target);
    return schedule::record(optimized, schedule::plan_default_gpu_schedule(optimized, options).transforms);
  }
  if (!config::get_bool("automatic_cpu_schedule")) return schedule::record(optimized, {});
  schedule::CpuScheduleOptions options = schedule::CpuScheduleOptions::from_config();
  options.target = target;
  return schedule::record(optimized, schedule::default_cpu_schedule(optimized, options).transforms);
}

std::vector<Candidate> gpu_schedule_option_seeds(const ir::LoweredRoutine& optimized, const ir::Target& target,
                                                 const schedule::ScheduleTrace& defaults) {
  if (!target.workgroups || !config::get_bool("automatic_gpu_schedule")) return {};
  const auto base = schedule::GpuScheduleOptions::from_config(target);
  std::vector<std::pair<std::string, schedule::GpuScheduleOptions>> variants;
  for (const std::int64_t block : {base.block_size / 2, base.block_size * 2}) {
    auto o = base;
    o.block_size = block;
    if (block >= 32) variants.emplace_back("gpu_schedule_block_size " + std::to_string(block), o);
  }
  for (const std::int64_t buckets : {std::int64_t{0}, std::int64_t{64}, std::int64_t{1024}}) {
    auto o = base;
    o.scatter_buckets = buckets;
    if (buckets != base.scatter_buckets)
      variants.emplace_back("gpu_scatter_buckets " + (buckets == 0 ? std::string("off") : std::to_string(buckets)), o);
  }
  using Vectors = schedule::GpuScheduleOptions::Vectors;
  for (const auto& [vectors, name] : {std::pair{Vectors::Off, "off"}, std::pair{Vectors::On, "on"}}) {
    auto o = base;
    o.vectors = vectors;
    if (vectors != base.vectors) variants.emplace_back(std::string("gpu_schedule_vectors ") + name, o);
  }
  if (base.reassociate) {
    for (const std::int64_t per_unit : {std::int64_t{0}, std::int64_t{2}, std::int64_t{16}}) {
      auto o = base;
      o.split_k_blocks_per_unit = per_unit;
      if (per_unit != base.split_k_blocks_per_unit)
        variants.emplace_back("gpu_split_k_blocks_per_unit " + std::to_string(per_unit), o);
    }
    auto o = base;
    o.reassociate = false;
    variants.emplace_back("gpu_schedule_reassociate false", o);
  }
  std::vector<Candidate> out;
  std::vector<std::vector<std::string>> seen = {defaults.steps};
  for (const auto& [what, options] : variants) {
    schedule::ScheduleTrace trace =
        schedule::record(optimized, schedule::plan_default_gpu_schedule(optimized, options).transforms);
    if (std::find(seen.begin(), seen.end(), trace.steps) != seen.end()) continue;
    seen.push_back(trace.steps);
    out.push_back({"default " + what, target, std::move(trace)});
  }
  return out;
}

std::vector<Candidate> seed_candidates(const ir::LoweredRoutine& optimized, const ir::Target& base, bool sweep_target) {
  std::vector<Candidate> out;
  const auto defaults = default_trace(optimized, base);
  out.push_back({"default", base, defaults});
  // On a GPU the unscheduled routine is one thread doing all the work: no baseline worth a run.
  if (!base.workgroups) out.push_back({"serial", base, schedule::record(optimized, {})});
  if (!sweep_target) return out;
  for (Candidate& c : gpu_schedule_option_seeds(optimized, base, defaults)) out.push_back(std::move(c));
  const Features f = features_of(scheduled_or_input(optimized, defaults));
  for (auto& [what, target] : target_variants(base, f, true)) {
    // A new threshold or kernel shape re-prices the tiles: the default schedule is made again.
    out.push_back({"default " + what, target, default_trace(optimized, target)});
  }
  return out;
}

std::vector<Candidate> menu_moves(const ir::LoweredRoutine& optimized, const Candidate& from, const ir::Target& base) {
  (void)base;
  std::vector<Candidate> out;
  const ir::LoweredRoutine scheduled = scheduled_or_input(optimized, from.trace);
  const Features f = features_of(scheduled);
  for (auto& [what, target] : target_variants(from.target, f, false))
    out.push_back({from.label + " " + what, target, from.trace, from.materialize_all});
  for (const auto& move : transform_moves(f, from.target)) {
    std::string step;
    try {
      step = schedule::record(scheduled, {move}).steps.front();
    } catch (const ScheduleError&) {
      continue;  // illegal here: pruned before anything compiles
    }
    Candidate c{from.label + " + " + step, from.target, from.trace, from.materialize_all};
    c.trace.steps.push_back(step);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cannl::tune
