// The default CPU schedule (see default_cpu.h). Three rounds over the current routine, each
// collecting candidates on the routine the previous round produced: tensorize, grid, vectorize.
#include "cannl/schedule/default_cpu.h"

#include <algorithm>

#include "cannl/schedule/legality.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "opt/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

namespace {

using detail::flatten_seq;

// Iterations of the leaves of a statement (the work a Grid loop over it would share out).
std::int64_t work_of(const ir::StmtRef& s) {
  if (const auto* f = std::get_if<ir::For>(&s->node)) return (f->end - f->begin) * work_of(f->body);
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    std::int64_t sum = 0;
    for (const auto& x : q->stmts) sum += work_of(x);
    return sum;
  }
  if (const auto* i = std::get_if<ir::If>(&s->node)) return work_of(i->body);
  if (const auto* t = std::get_if<ir::TileMma>(&s->node)) return t->i.extent() * t->j.extent() * t->k.extent();
  return 1;
}

class Scheduler {
 public:
  Scheduler(const ir::LoweredRoutine& r, const CpuScheduleOptions& o) : out_{r, {}}, options_(o) {}

  ScheduledRoutine run() {
    if (options_.tensorize) tensorize_round();
    grid_round();
    if (options_.vectorize) vectorize_round();
    return out_;
  }

 private:
  ScheduledRoutine out_;
  const CpuScheduleOptions& options_;

  void push(const Transform& t) {
    out_.routine = schedule::apply(out_.routine, t);
    out_.transforms.push_back(t);
  }
  std::vector<const ir::For*> loops_preorder(const ir::StmtRef& root) const {
    std::vector<const ir::For*> out;
    opt::for_each_stmt(root, [&](const ir::Stmt& s) {
      if (const auto* f = std::get_if<ir::For>(&s.node)) out.push_back(f);
    });
    return out;
  }

  // ---- tensorize ----
  std::optional<Tensorize> matmul_at(const ir::For& top) const {
    std::vector<const ir::For*> loops{&top};
    ir::StmtRef leaf;
    while (true) {
      const auto body = flatten_seq(loops.back()->body);
      if (body.size() != 1) break;
      leaf = body[0];
      const auto* inner = std::get_if<ir::For>(&leaf->node);
      if (!inner) break;
      loops.push_back(inner);
    }
    if (loops.size() < 3 || !leaf || !std::holds_alternative<ir::Set>(leaf->node)) return std::nullopt;
    const ir::Symbol s[3] = {loops[loops.size() - 3]->index, loops[loops.size() - 2]->index, loops.back()->index};
    std::int64_t work = 1;
    for (std::size_t k = loops.size() - 3; k < loops.size(); ++k) {
      if (loops[k]->axis != ir::AxisType::Serial) return std::nullopt;
      work *= loops[k]->end - loops[k]->begin;
    }
    if (work < options_.min_tile_work) return std::nullopt;
    for (int p : {0, 1, 2})
      for (int q : {0, 1, 2}) {
        if (p == q) continue;
        const Tensorize t{s[p], s[q], s[3 - p - q]};
        if (detail::match_update(std::get<ir::Set>(leaf->node), t)) return t;
      }
    return std::nullopt;
  }

  void tensorize_round() {
    std::vector<Tensorize> found;
    for (const ir::For* f : loops_preorder(out_.routine.body)) {
      const auto site = detail::find_loop(out_.routine.body, f->index);
      if (!site || site->in_tile || site->in_local_scope) continue;
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

  // Splits the outermost row loop (i or j) so the tiles can be shared out, then tensorizes.
  void tensorize_with_rows(Tensorize t) {
    const auto site = detail::find_loop(out_.routine.body, t.i);
    const auto site_j = detail::find_loop(out_.routine.body, t.j);
    const auto site_k = detail::find_loop(out_.routine.body, t.k);
    const std::size_t depth_i = site->enclosing.size(), depth_j = site_j->enclosing.size(), depth_k = site_k->enclosing.size();
    const bool i_outer = depth_i < depth_j && depth_i < depth_k;
    const bool j_outer = depth_j < depth_i && depth_j < depth_k;
    const ir::For& top = i_outer ? *site->loop : *site_j->loop;
    const std::int64_t extent = top.end - top.begin;
    const std::int64_t work = work_of(i_outer ? site->stmt : site_j->stmt);
    if ((i_outer || j_outer) && top.begin == 0 && work >= options_.min_parallel) {
      const std::int64_t want = std::max<std::int64_t>(1, (extent + options_.grid_chunks - 1) / options_.grid_chunks);
      std::int64_t factor = extent;
      for (std::int64_t f = want; f < extent; ++f)
        if (extent % f == 0) { factor = f; break; }
      if (factor < extent) {
        const Split s = split(top.index, factor);
        push(s);
        (i_outer ? t.i : t.j) = s.inner;
      }
    }
    push(t);
  }

  // ---- grid ----
  void grid_round() {
    for (const auto& top : flatten_seq(out_.routine.body)) grid_in(top);
  }
  void grid_in(const ir::StmtRef& s) {
    const auto* f = std::get_if<ir::For>(&s->node);
    if (!f) {
      if (const auto* q = std::get_if<ir::Seq>(&s->node))
        for (const auto& x : q->stmts) grid_in(x);
      return;
    }
    if (work_of(s) < options_.min_parallel) return;
    if (f->begin == 0 && f->end - f->begin >= 2 && f->axis == ir::AxisType::Serial &&
        parallel_legality(out_.routine, f->index).legality == Legality::Legal) {
      push(Retype{f->index, ir::AxisType::Grid});
      return;
    }
    for (const auto& x : flatten_seq(f->body)) grid_in(x);
  }

  // ---- vectorize ----
  bool contiguous_store(const ir::For& f) const {
    const auto body = flatten_seq(f.body);
    const auto* x = body.size() == 1 ? std::get_if<ir::Set>(&body[0]->node) : nullptr;
    if (!x || x->index.empty()) return false;
    const ir::AxisIndex& last = x->index.back();
    const bool unit = std::any_of(last.terms.begin(), last.terms.end(),
                                  [&](const ir::AffineTerm& t) { return t.symbol == f.index && t.coeff == 1; });
    for (std::size_t d = 0; d + 1 < x->index.size(); ++d)
      if (x->index[d].mentions(f.index)) return false;
    return unit && !detail::accumulation_op(x->node, x->index, x->value);
  }
  void vectorize_round() {
    std::vector<ir::Symbol> found;
    for (const ir::For* f : loops_preorder(out_.routine.body)) {
      if (f->axis != ir::AxisType::Serial || f->end - f->begin < 4 || !contiguous_store(*f)) continue;
      const auto site = detail::find_loop(out_.routine.body, f->index);
      if (!site || site->in_tile || site->in_local_scope) continue;
      if (parallel_legality(out_.routine, f->index).legality == Legality::Legal) found.push_back(f->index);
    }
    for (const ir::Symbol s : found) push(Retype{s, ir::AxisType::Vectorized});
  }
};

}  // namespace

CpuScheduleOptions CpuScheduleOptions::from_config() {
  CpuScheduleOptions o;
  o.min_parallel = config::get_int("cpu_schedule_min_parallel");
  return o;
}

ScheduledRoutine default_cpu_schedule(const ir::LoweredRoutine& routine, const CpuScheduleOptions& options) {
  return Scheduler(routine, options).run();
}

ir::LoweredRoutine maybe_default_cpu_schedule(const ir::LoweredRoutine& routine) {
  if (!config::get_bool("automatic_cpu_schedule")) return routine;
  ScheduledRoutine s;
  {
    logging::ScopedTimer timer("schedule default_cpu " + routine.name);
    s = default_cpu_schedule(routine, CpuScheduleOptions::from_config());
  }
  if (logging::debug_level() >= 2)
    files::write_atomically(files::build_dir() / (routine.name + ".sched.ll"), ir::print_loop_ir(s.routine));
  return s.routine;
}

}  // namespace cannl::schedule
