// The default CPU schedule (see default_cpu.h). Four rounds over the current routine, each
// collecting candidates on the routine the previous round produced: tensorize, grid, reassociate
// (after grid, so the partials get a row per Grid iteration), vectorize.
#include "cannl/schedule/default_cpu.h"

#include <algorithm>
#include <set>

#include "cannl/ir/target.h"
#include "cannl/schedule/legality.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/gemv_nest.h"
#include "schedule/loop_tree.h"
#include "schedule/matmul_nest.h"
#include "schedule/parallel_loops.h"
#include "schedule/segmented_routine.h"
#include "schedule/window_nest.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

namespace {

using detail::flatten_seq;

using detail::work_of;

// Staged partials (stage_shared_stores): each partial must sum at least this many updates to
// repay zeroing p and the extra pass adding it in; p at most this many cells (64 MiB of f32).
constexpr std::int64_t kMinStagedSteps = 8;
constexpr std::int64_t kMaxStagedCells = std::int64_t{16} << 20;
// Gathered windows (gather_windows): the transposed convolution's zero border may at most grow
// the nest's work this many times.
constexpr double kMaxGatherGrowth = 2.0;
// Split partials (split_long_reductions): nests of at most this many cells (a few register
// tiles, which one thread would run alone) with at least this many steps per cell get this many
// partials, a fixed count so results do not depend on the machine's threads.
constexpr std::int64_t kMaxSplitCells = 4096;
constexpr std::int64_t kMinSplitSteps = 8192;
constexpr std::int64_t kReductionPartials = 4;
// Windowed reductions (window_round): trailing reduction loops of at most this many iterations
// accumulate in a register (longer ones are the interleaved Split_reduce's).
constexpr std::int64_t kMaxPrivatizedWindow = 64;
// Unit-stride loops sink below trailing loops of at most this many iterations together (a
// pooling window), so they vectorize.
constexpr std::int64_t kMaxSunkWindow = 16;

class Scheduler {
 public:
  Scheduler(const ir::LoweredRoutine& r, const CpuScheduleOptions& o) : routine_(r), options_(o) {}

  ScheduledRoutine run() {
    if (options_.tensorize) timed("tensorize", [&] { tensorize_round(); });
    timed("strided_gemv", [&] { strided_gemv_round(); });
    if (options_.vectorize) timed("sink_unit_stride", [&] { sink_unit_stride_round(); });
    timed("window", [&] { window_round(); });
    timed("grid", [&] { grid_round(); });
    if (options_.reassociate && options_.vectorize) timed("reassociate", [&] { reassociate_round(); });
    if (options_.vectorize) timed("vectorize", [&] { vectorize_round(); });
    return {routine_.whole(), transforms_};
  }

 private:
  // Plans address loops of one nest, so each applies to the segment holding the nest
  // (segmented_routine.h); only the epilogue fusion, which moves a nest into its predecessor,
  // works on the whole routine.
  detail::SegmentedRoutine routine_;
  std::vector<Transform> transforms_;
  const CpuScheduleOptions& options_;

  // A plan for the nest in one segment.
  struct Plan {
    std::size_t segment;
    std::vector<Transform> steps;
  };
  // A loop outside tiles and local scopes, with the segment holding it.
  struct Candidate {
    std::size_t segment;
    detail::LoopSite site;
  };

  // Each round's time at debug level 1 (the host side of a cold compile).
  template <class F>
  void timed(const char* round, F&& body) {
    logging::ScopedTimer timer(std::string("schedule round ") + round + " " + routine_.whole().name);
    body();
  }

  void push(std::size_t segment, const Transform& t) {
    routine_.apply(segment, {t});
    transforms_.push_back(t);
  }
  // Every loop outside tiles and local scopes, in preorder.
  std::vector<Candidate> candidates() const {
    std::vector<Candidate> out;
    for (std::size_t k = 0; k < routine_.size(); ++k)
      for (detail::LoopSite& site : detail::loop_sites(routine_.segment(k)))
        if (!site.in_tile && !site.in_local_scope) out.push_back({k, std::move(site)});
    return out;
  }
  // The top loop of every perfect nest outside tiles and local scopes, in preorder.
  std::vector<Candidate> nest_tops() const {
    std::vector<Candidate> out;
    for (Candidate& c : candidates()) {
      const auto& enclosing = c.site.enclosing;
      const bool nested = !enclosing.empty() && flatten_seq(enclosing.back()->body).size() == 1;
      if (!nested) out.push_back(std::move(c));
    }
    return out;
  }
  // Applies each plan's steps together; a plan a step of which is refused (ScheduleError)
  // leaves its nest as it was.
  void push_each(const std::vector<Plan>& plans) {
    for (const Plan& plan : plans) {
      try {
        routine_.apply(plan.segment, plan.steps);
        transforms_.insert(transforms_.end(), plan.steps.begin(), plan.steps.end());
      } catch (const ScheduleError&) {
      }
    }
  }
  std::vector<const ir::For*> loops_preorder(const ir::StmtRef& root) const {
    std::vector<const ir::For*> out;
    ir::for_each_stmt(root, [&](const ir::Stmt& s) {
      if (const auto* f = std::get_if<ir::For>(&s.node)) out.push_back(f);
    });
    return out;
  }

  // ---- tensorize ----
  std::optional<Tensorize> matmul_at(const ir::For& top) const {
    ir::StmtRef leaf;
    const std::vector<const ir::For*> loops = detail::perfect_nest(top, leaf);
    if (loops.size() < 3 || !leaf || !std::holds_alternative<ir::Set>(leaf->node)) return std::nullopt;
    const ir::Symbol s[3] = {loops[loops.size() - 3]->index, loops[loops.size() - 2]->index, loops.back()->index};
    std::int64_t work = 1;
    for (std::size_t k = loops.size() - 3; k < loops.size(); ++k) {
      if (loops[k]->axis != ir::AxisType::Serial) return std::nullopt;
      work *= loops[k]->end - loops[k]->begin;
    }
    if (work < options_.tile_threshold()) return std::nullopt;
    const auto axis = [&](ir::Symbol x) {
      const ir::For* f = *std::find_if(loops.end() - 3, loops.end(), [&](const ir::For* g) { return g->index == x; });
      return ir::TileAxis{f->index, f->begin, f->end};
    };
    const ir::Set& store = std::get<ir::Set>(leaf->node);
    for (int p : {0, 1, 2})
      for (int q : {0, 1, 2}) {
        if (p == q) continue;
        const Tensorize t{s[p], s[q], s[3 - p - q]};
        // The store must take distinct cells over i and j (d[i + j] is no tile): Tensorize
        // refuses it, and the plain path's push does not catch the refusal.
        if (detail::match_update(store, t) && ir::distinct_cells(*store.node, store.index, {axis(t.i), axis(t.j)})) return t;
      }
    return std::nullopt;
  }

  void tensorize_round() {
    if (options_.reassociate) {
      if (options_.gather_windows) timed("gather_windows", [&] { gather_windows(); });
      timed("stage_shared_stores", [&] { stage_shared_stores(); });
      timed("split_long_reductions", [&] { split_long_reductions(); });
    }
    timed("reordered_tensorize", [&] { reordered_tensorize(); });
    std::vector<Tensorize> found;
    for (const Candidate& c : candidates()) {
      const ir::For* f = c.site.loop;
      // Only the outermost loop of the three: a match from an enclosing loop comes first.
      if (auto t = matmul_at(*f); t && (f->index == t->i || f->index == t->j || f->index == t->k)) {
        const bool nested = std::any_of(found.begin(), found.end(), [&](const Tensorize& g) {
          return g.i == t->i || g.j == t->j || g.k == t->k;
        });
        if (!nested) found.push_back(*t);
      }
    }
    for (const Tensorize& t : found) tensorize_with_rows(t);
  }

  // Scatters over sliding windows (stride-1 convolution input gradients) as the transposed
  // convolution when its zero border adds at most kMaxGatherGrowth times the work and the gather
  // then tiles like a forward convolution (licensed re-association; schedule/window_nest.h).
  // The rest are staged below.
  void gather_windows() {
    std::vector<Plan> plans;
    for (const Candidate& c : nest_tops())
      if (auto plan = detail::plan_gather_windows(routine_.part(c.segment), *c.site.loop, kMaxGatherGrowth,
                                                  options_.tile_threshold(), options_.target))
        plans.push_back({c.segment, {*plan}});
    push_each(plans);
  }

  // Matmul-like nests whose store several cell iterations share (convolution input gradients):
  // their updates staged in a partials node the tile can fill whole, then added in (licensed
  // re-association; schedule/matmul_nest.h).
  // A convolution's input gradient is staged along its channels (schedule/window_nest.h); when
  // a swap of that plan is refused, as the nest stands.
  void stage_shared_stores() {
    struct Choices {
      std::size_t segment;
      std::vector<Transform> along_channels, as_lowered;
    };
    std::vector<Choices> nests;
    for (const Candidate& c : nest_tops()) {
      auto channels = detail::plan_staged_windows(*c.site.loop, kMinStagedSteps, kMaxStagedCells, options_.cached_partials_cells,
                                                   options_.grid_chunks);
      auto shared = detail::plan_shared_store(*c.site.loop, kMinStagedSteps, kMaxStagedCells);
      if (!channels && !shared) continue;
      nests.push_back({c.segment, channels ? *channels : std::vector<Transform>{},
                       shared ? std::vector<Transform>{*shared} : std::vector<Transform>{}});
    }
    for (const Choices& n : nests)
      for (const auto* steps : {&n.along_channels, &n.as_lowered}) {
        if (steps->empty()) continue;
        try {
          routine_.apply(n.segment, *steps);
          transforms_.insert(transforms_.end(), steps->begin(), steps->end());
          break;
        } catch (const ScheduleError&) {
        }
      }
  }

  // Matmul-like nests with few cells and long reductions (a first convolution's weight
  // gradient): a fixed number of partials over the outer reduction, run in parallel, then added
  // in order (licensed re-association; schedule/matmul_nest.h).
  void split_long_reductions() {
    std::vector<Plan> plans;
    for (const Candidate& c : nest_tops())
      if (auto plan = detail::plan_split_partials(*c.site.loop, kMaxSplitCells, kMinSplitSteps, kReductionPartials))
        plans.push_back({c.segment, {plan->split, plan->partials}});
    push_each(plans);
  }

  // Matmul-like nests whose three innermost loops are not the whole matmul (convolutions,
  // weight gradients, contractions over several loops): reordered so they are, then tensorized
  // with the loops around them folded in (schedule/matmul_nest.h). Runs before the plain path,
  // which takes the three-loop nests this leaves.
  void reordered_tensorize() {
    std::set<ir::Symbol> claimed;
    std::vector<Plan> steps;
    for (const Candidate& c : candidates()) {
      const auto nest = loops_preorder(c.site.stmt);
      if (std::any_of(nest.begin(), nest.end(), [&](const ir::For* g) { return claimed.contains(g->index); })) continue;
      auto plan = detail::plan_matmul_nest(*c.site.loop, options_.tile_threshold(), options_.reassociate, options_.target);
      if (!plan) continue;
      for (const ir::For* g : nest) claimed.insert(g->index);
      steps.push_back({c.segment, {plan->swaps.begin(), plan->swaps.end()}});
      steps.back().steps.push_back(plan->tile);
    }
    push_each(steps);  // a swap the legality check refuses leaves its nest as lowered
  }

  // Tensorizes; an outermost column loop (or, to fuse epilogues, row loop) is split first so the
  // Grid round can share the tiles out. Rows otherwise stay whole: one tile over every row, which
  // the final lowering round gives the target's team (B is packed once for all of them).
  void tensorize_with_rows(Tensorize t) {
    const auto held = routine_.holder(t.i);
    internal_check(held.has_value(), "default_cpu: a tensorize candidate's loop is in no segment");
    const std::size_t segment = *held;
    const ir::LoweredRoutine part = routine_.part(segment);
    const auto site = detail::find_loop(part.body, t.i);
    const auto site_j = detail::find_loop(part.body, t.j);
    const auto site_k = detail::find_loop(part.body, t.k);
    const std::size_t depth_i = site->enclosing.size(), depth_j = site_j->enclosing.size(), depth_k = site_k->enclosing.size();
    const bool i_outer = depth_i < depth_j && depth_i < depth_k;
    const bool j_outer = depth_j < depth_i && depth_j < depth_k;
    const ir::For& top = i_outer ? *site->loop : *site_j->loop;
    const std::int64_t extent = top.end - top.begin;
    const std::int64_t work = work_of(i_outer ? site->stmt : site_j->stmt);
    // A batched matmul (an enclosing loop the grid round can share out, like the batch of
    // d[b, s, o]) keeps whole tiles: splitting its rows would repack b's panel once per chunk.
    const auto& around = (i_outer ? site : site_j)->enclosing;
    const bool batched = std::any_of(around.begin(), around.end(), [&](const ir::For* f) {
      return detail::provably_parallel(part, *f);
    });
    const bool split_rows = i_outer && options_.fuse_epilogues;
    if ((split_rows || j_outer) && !batched && top.begin == 0 && work >= options_.min_parallel) {
      const std::int64_t want = std::max<std::int64_t>(1, (extent + options_.grid_chunks - 1) / options_.grid_chunks);
      std::int64_t factor = extent;
      for (std::int64_t f = want; f < extent; ++f)
        if (extent % f == 0) { factor = f; break; }
      if (factor < extent) {
        const Split s = split(top.index, factor);
        push(segment, s);
        (i_outer ? t.i : t.j) = s.inner;
        push(segment, t);
        if (options_.fuse_epilogues) fuse_epilogues(s.outer, factor, extent);
        return;
      }
    }
    push(segment, t);
  }

  // ---- epilogues ----
  // Applies `steps` when all are legal and loop `parallel` stays as provably parallel as it was
  // (a tail reducing over the rows would serialize the matmul); else nothing changes.
  bool try_push(const std::vector<Transform>& steps, ir::Symbol parallel) {
    const ir::LoweredRoutine& now = routine_.whole();
    ir::LoweredRoutine next;
    try {
      next = schedule::apply(now, steps);
    } catch (const ScheduleError&) {
      return false;
    }
    if (parallel_legality(now, parallel).legality == Legality::Legal &&
        parallel_legality(next, parallel).legality != Legality::Legal)
      return false;
    routine_.reset(next);  // the tail left its segment for the anchor's
    transforms_.insert(transforms_.end(), steps.begin(), steps.end());
    return true;
  }
  // The elementwise tails right after a split matmul (bias add, activation: loops over the same
  // `extent` rows reading a node the chunk loop writes) move into its row chunks, split the same
  // way, so each Grid chunk finishes its rows while they are in cache.
  void fuse_epilogues(ir::Symbol anchor, std::int64_t factor, std::int64_t extent) {
    while (true) {
      const auto top = flatten_seq(routine_.whole().body);
      const auto at = std::find_if(top.begin(), top.end(), [&](const ir::StmtRef& x) {
        const auto* f = std::get_if<ir::For>(&x->node);
        return f && f->index == anchor;
      });
      if (at == top.end() || at + 1 == top.end()) return;
      const auto* tail = std::get_if<ir::For>(&(*(at + 1))->node);
      if (!tail || tail->begin != 0 || tail->end != extent) return;
      std::set<int> written;
      for (const auto& a : detail::collect_accesses(std::get<ir::For>((*at)->node).body).accesses)
        if (a.write) written.insert(a.node->id);
      int target = -1;
      for (const auto& a : detail::collect_accesses(tail->body).accesses)
        if (!a.write && written.contains(a.node->id)) target = a.node->id;
      if (target < 0 || !try_push({split(tail->index, factor), FuseEpilogue{target, anchor}}, anchor)) return;
    }
  }

  // ---- unit stride innermost ----
  // Nests ending in short loops that step across the store (a pooling window: d[b, 2i + r,
  // 2j + s, c] over r, s) with the loop along d's unit stride above them (the channels): that
  // loop moves innermost by adjacent Swaps, so the vectorize round takes it. Each cell keeps its
  // order of updates (the Swaps are checked): bitwise.
  void sink_unit_stride_round() {
    std::vector<Plan> plans;
    for (const Candidate& c : nest_tops()) {
      ir::StmtRef leaf;
      const std::vector<const ir::For*> loops = detail::perfect_nest(*c.site.loop, leaf);
      const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
      if (!store || store->index.empty() || loops.size() < 2) continue;
      std::size_t first_short = loops.size();
      std::int64_t window = 1;
      while (first_short > 1 && loops[first_short - 1]->end - loops[first_short - 1]->begin <= kMaxSunkWindow &&
             window * (loops[first_short - 1]->end - loops[first_short - 1]->begin) <= kMaxSunkWindow) {
        --first_short;
        window *= loops[first_short]->end - loops[first_short]->begin;
      }
      if (first_short == loops.size() || contiguous_index(*store, loops.back()->index)) continue;
      const ir::For* unit = loops[first_short - 1];
      if (unit->axis != ir::AxisType::Serial || unit->end - unit->begin < 16 || !contiguous_index(*store, unit->index))
        continue;
      // The store's last axis (unit's) must not mention the loops unit passes: there the cell
      // fixes unit, so a cell's updates vary only along those loops, whose order is kept. In
      // dx[c + 2r] several (c, r) reach one cell and the sink would reverse their order (Swap
      // allows that for a reduction: a re-association this bitwise round has no licence for).
      if (std::any_of(loops.begin() + static_cast<std::ptrdiff_t>(first_short), loops.end(),
                      [&](const ir::For* f) { return store->index.back().mentions(f->index); }))
        continue;
      Plan plan{c.segment, {}};
      for (std::size_t k = first_short; k < loops.size(); ++k) plan.steps.push_back(Swap{unit->index, loops[k]->index});
      plans.push_back(std::move(plan));
    }
    push_each(plans);
  }
  // Whether loop `s` steps along the last axis of the store with coefficient 1 and no other axis.
  static bool contiguous_index(const ir::Set& x, ir::Symbol s) {
    const ir::AxisIndex& last = x.index.back();
    const bool unit = std::any_of(last.terms.begin(), last.terms.end(),
                                  [&](const ir::AffineTerm& t) { return t.symbol == s && t.coeff == 1; });
    for (std::size_t d = 0; d + 1 < x.index.size(); ++d)
      if (x.index[d].mentions(s)) return false;
    return unit;
  }

  // ---- grid ----
  // ---- windowed reductions: the accumulator cell privatized over the window loops ----
  void window_round() {
    std::vector<Plan> plans;
    for (const Candidate& c : nest_tops())
      if (auto plan = detail::plan_window_privatize(*c.site.loop, kMaxPrivatizedWindow))
        plans.push_back({c.segment, {*plan}});
    push_each(plans);
  }

  void grid_round() {
    for (std::size_t k = 0; k < routine_.size(); ++k) {
      const ir::StmtRef segment = routine_.segment(k);  // the statements as the round found them
      for (const auto& top : flatten_seq(segment)) grid_in(k, top);
    }
  }
  void grid_in(std::size_t segment, const ir::StmtRef& s) {
    const auto* f = std::get_if<ir::For>(&s->node);
    if (!f) {
      if (const auto* q = std::get_if<ir::Seq>(&s->node))
        for (const auto& x : q->stmts) grid_in(segment, x);
      return;
    }
    if (work_of(s) < options_.min_parallel) return;
    if (detail::provably_parallel(routine_.part(segment), *f)) {
      push(segment, Retype{f->index, ir::AxisType::Grid});
      return;
    }
    for (const auto& x : flatten_seq(f->body)) grid_in(segment, x);
  }

  // ---- strided matrix-vector products (gemv_nest.h) ----
  void strided_gemv_round() {
    // Twice: a partitioned extent's head segment is planned on the second pass.
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Plan> plans;
      for (const Candidate& c : nest_tops())
        if (auto p = detail::plan_strided_gemv(*c.site.loop)) plans.push_back({c.segment, std::move(*p)});
      push_each(plans);
    }
  }

  // ---- reassociate ----
  // v reads only nodes and constants (what the vector printer renders), every read moving with
  // the loop is contiguous in it, and at least one does.
  static bool streams(const ir::ScalarRef& v, ir::Symbol r, bool& moves) {
    if (std::holds_alternative<ir::Constant>(v->node)) return true;
    if (const auto* g = std::get_if<ir::Get>(&v->node)) {
      if (std::none_of(g->index.begin(), g->index.end(), [&](const ir::AxisIndex& i) { return i.mentions(r); })) return true;
      moves = true;
      return ir::contiguous_in(g->index, r);
    }
    const auto* a = std::get_if<ir::Apply>(&v->node);
    return a && std::all_of(a->args.begin(), a->args.end(), [&](const ir::ScalarRef& x) { return streams(x, r, moves); });
  }
  // An innermost f32 add / sub (d - v) / max / min reduction (a dot product's fma included) over a contiguous
  // stream, long enough to pay for the partials and their combine.
  bool streaming_reduction(const ir::For& f) const {
    if (f.axis != ir::AxisType::Serial || f.end - f.begin < std::max(options_.min_reassociate_extent, options_.reassociate_lanes))
      return false;
    const auto body = flatten_seq(f.body);
    const auto* x = body.size() == 1 ? std::get_if<ir::Set>(&body[0]->node) : nullptr;
    if (!x || ir::mentions(x->index, f.index))
      return false;
    const auto op = detail::accumulation_op(x->node, x->index, x->value);
    const auto* a = std::get_if<ir::Apply>(&x->value->node);
    const bool fused = op && *op == ir::Op::Add && a->op == ir::Op::Fma;  // d = fma(a, b, d)
    if (!op || (*op != ir::Op::Add && *op != ir::Op::Sub && *op != ir::Op::Max && *op != ir::Op::Min) || (a->op != *op && !fused) ||
        a->dtype != ir::DType::F32)
      return false;
    bool moves = false;
    for (const auto& arg : a->args) {
      const auto* g = std::get_if<ir::Get>(&arg->node);
      if (g && g->node == x->node && g->index == x->index) continue;
      if (!streams(arg, f.index, moves)) return false;
    }
    return moves;
  }
  std::int64_t lanes_for(std::int64_t extent) const {
    if (extent >= options_.long_reduction_extent) return options_.reassociate_lanes;
    return std::min(options_.reassociate_lanes, options_.short_reduction_lanes);
  }
  void reassociate_round() {
    std::vector<Plan> plans;
    for (const Candidate& c : candidates())
      if (streaming_reduction(*c.site.loop))
        plans.push_back({c.segment, {split_reduce_lanes(c.site.loop->index, lanes_for(c.site.loop->end - c.site.loop->begin),
                                                        ir::AxisType::Vectorized)}});
    push_each(plans);  // refused (e.g. the partials of a huge Grid nest): the loop stays serial
  }

  // ---- vectorize ----
  bool contiguous_store(const ir::For& f) const {
    const auto body = flatten_seq(f.body);
    const auto* x = body.size() == 1 ? std::get_if<ir::Set>(&body[0]->node) : nullptr;
    // An accumulation into d[.., s] (a bias gradient summing rows) is elementwise along s: each
    // lane keeps its own cell's order of updates.
    return x && !x->index.empty() && contiguous_index(*x, f.index);
  }
  void vectorize_round() {
    std::vector<std::pair<std::size_t, ir::Symbol>> found;
    for (const Candidate& c : candidates()) {
      const ir::For* f = c.site.loop;
      if (f->axis != ir::AxisType::Serial || f->end - f->begin < 4 || !contiguous_store(*f)) continue;
      if (parallel_legality(routine_.part(c.segment), f->index).legality == Legality::Legal)
        found.emplace_back(c.segment, f->index);
    }
    for (const auto& [segment, s] : found) push(segment, Retype{s, ir::AxisType::Vectorized});
  }
};

}  // namespace

CpuScheduleOptions CpuScheduleOptions::from_config() {
  CpuScheduleOptions o;
  o.min_parallel = config::get_int("cpu_schedule_min_parallel");
  o.reassociate = config::get_bool("cpu_schedule_reassociate");
  o.gather_windows = config::get_bool("cpu_schedule_gather_windows");
  return o;
}

ScheduledRoutine default_cpu_schedule(const ir::LoweredRoutine& routine, const CpuScheduleOptions& options) {
  return Scheduler(routine, options).run();
}

ir::LoweredRoutine maybe_default_cpu_schedule(const ir::LoweredRoutine& routine, const ir::Target& target) {
  if (!config::get_bool("automatic_cpu_schedule")) return routine;
  ScheduledRoutine s;
  {
    logging::ScopedTimer timer("schedule default_cpu " + routine.name);
    CpuScheduleOptions options = CpuScheduleOptions::from_config();
    options.target = target;
    s = default_cpu_schedule(routine, options);
  }
  if (logging::debug_level() >= 2)
    files::write_atomically(files::build_dir() / (routine.name + ".sched.ll"), ir::print_loop_ir(s.routine));
  return s.routine;
}

}  // namespace cannl::schedule
