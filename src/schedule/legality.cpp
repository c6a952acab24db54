// The legality oracle (see legality.h). For loop s, two accesses to a written node conflict
// when two different iterations s != s' can reach the same cell. An axis whose index is
// c*s + rest in both accesses separates the iterations when every possible difference of the
// rests lies strictly inside (-|c|, |c|): equal cells then force c*(s - s') = 0.
#include "cannl/schedule/legality.h"

#include <optional>
#include <set>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/loop_tree.h"
#include "schedule/schedule_error.h"

namespace cannl::schedule {

using detail::Access;
using detail::SymbolRange;

std::string_view legality_name(Legality legality) {
  switch (legality) {
    case Legality::Legal: return "legal";
    case Legality::Illegal: return "illegal";
    case Legality::Unknown: return "unknown";
  }
  return "?";
}

namespace {

// Index text with the printed loop names (i0, i1, ...) and static names.
class AccessText {
 public:
  explicit AccessText(const ir::LoweredRoutine& r) {
    const auto loops = detail::canonical_loops(r.body);
    for (std::size_t k = 0; k < loops.size(); ++k) names_[loops[k]] = "i" + std::to_string(k);
    for (const auto& s : r.statics) names_[s.symbol] = s.name.empty() ? "s" + std::to_string(s.symbol.id) : s.name;
  }
  std::string operator()(const Access& x) const {
    std::string out = x.node->debug_name();
    if (x.whole_node) return "zero_out " + out;
    out += "[";
    for (std::size_t k = 0; k < x.index.size(); ++k)
      out += (k ? ", " : "") + (static_cast<int>(k) == x.dyn_axis ? "?" : index(x.index[k]));
    return out + "]";
  }

 private:
  std::map<ir::Symbol, std::string> names_;
  std::string index(const ir::AxisIndex& i) const {
    std::string out;
    for (const auto& t : i.terms) {
      const auto it = names_.find(t.symbol);
      out += (out.empty() ? "" : " + ") + (t.coeff == 1 ? "" : std::to_string(t.coeff) + "*") +
             (it == names_.end() ? "?" : it->second);
    }
    if (out.empty()) return std::to_string(i.offset);
    return i.offset == 0 ? out : out + " + " + std::to_string(i.offset);
  }
};

// The verdict for the loop at `site` (its loop and the loops around it) of `routine`.
LegalityVerdict legality_at(const ir::LoweredRoutine& routine, const detail::LoopSite* site, bool license_reduction) {
  const ir::Symbol axis = site->loop->index;
  if (site->loop->end - site->loop->begin <= 1) return {Legality::Legal, "", false};
  const detail::LoopAccesses acc = detail::collect_accesses(site->loop->body);
  if (!acc.shared_local_writes.empty())
    return {Legality::Illegal, acc.shared_local_writes.front() + " is declared outside the loop and set in every iteration", false};
  const auto ranges = detail::symbol_ranges(routine, site->enclosing);
  LegalityVerdict verdict{Legality::Legal, "", false};
  std::optional<AccessText> text;  // naming walks the whole routine: only for a reason
  auto describe = [&](const Access& x) {
    if (!text) text.emplace(routine);
    return (*text)(x);
  };
  for (const Access& w : acc.accesses) {
    if (!w.write) continue;
    for (const Access& a : acc.accesses) {
      if (a.node != w.node || detail::separated_by(w, a, axis, ranges, acc.inner)) continue;
      if (license_reduction && w.reduction >= 0 && a.reduction == w.reduction) {
        verdict.reduction = true;
        continue;
      }
      const std::string pair = describe(w) + " (written) and " + describe(a) +
                               (a.write ? " (written)" : " (read)");
      const detail::SymbolRange axis_range{site->loop->begin, site->loop->end - 1, true};
      if (detail::proven_conflict(w, a, axis, axis_range, ranges, acc.inner))
        return {Legality::Illegal, pair + " reach the same cell in different iterations", false};
      if (verdict.legality == Legality::Legal)
        verdict = {Legality::Unknown, pair + " may reach the same cell in different iterations", false};
    }
  }
  return verdict;
}

}  // namespace

LegalityVerdict parallel_legality(const ir::LoweredRoutine& routine, ir::Symbol axis,
                                  bool license_reduction) {
  const auto site = detail::find_loop(routine.body, axis);
  if (!site) return {Legality::Unknown, "no such loop", false};
  return legality_at(routine, &*site, license_reduction);
}

namespace {

class StructureChecker {
 public:
  explicit StructureChecker(const ir::LoweredRoutine& r) : routine_(r) {}

  void stmt(const ir::StmtRef& s) {
    if (!s) return;
    if (const auto* f = std::get_if<ir::For>(&s->node)) return loop(*f);
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts) stmt(x);
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      const bool divergent = !ir::same_in_every_thread(i->condition, thread_indices());
      divergent_ifs_ += divergent ? 1 : 0;
      stmt(i->body);
      divergent_ifs_ -= divergent ? 1 : 0;
    } else if (std::holds_alternative<ir::Barrier>(s->node) && divergent_ifs_ > 0) {
      throw ScheduleError("validate_parallel: a barrier under an If whose condition may differ between a block's "
                          "threads in routine '" + routine_.name +
                          "' (threads that skip it would deadlock); move it out of the If");
    }
    // TileMma fallbacks and local scopes hold no annotated loops (checked in `loop`).
  }

 private:
  const ir::LoweredRoutine& routine_;
  int divergent_ifs_ = 0, grids_ = 0, workgroups_ = 0;
  // The loops around the current one: each annotated loop's site without searching the routine.
  std::vector<const ir::For*> enclosing_;

  // The indices of the thread loops (Workgroup, WorkgroupReduce) around the current statement.
  std::set<ir::Symbol> thread_indices() const {
    std::set<ir::Symbol> out;
    for (const ir::For* f : enclosing_)
      if (f->axis == ir::AxisType::Workgroup || f->axis == ir::AxisType::WorkgroupReduce) out.insert(f->index);
    return out;
  }

  void loop(const ir::For& f) {
    const bool hardware = f.axis == ir::AxisType::Grid || f.axis == ir::AxisType::Workgroup ||
                          f.axis == ir::AxisType::WorkgroupReduce;
    if (hardware && f.begin != 0)
      fail(f, "a " + std::string(ir::axis_type_name(f.axis)) + " loop must start at 0", "Split or Pad it first");
    int& depth = f.axis == ir::AxisType::Grid ? grids_ : workgroups_;
    if (hardware && ++depth > 3)
      fail(f, "more than 3 nested " + std::string(ir::axis_type_name(f.axis)) + " loops", "keep the outer ones Serial");
    if (f.axis != ir::AxisType::Serial && f.axis != ir::AxisType::Unrolled) {
      const bool licensed = f.axis == ir::AxisType::Vectorized || f.axis == ir::AxisType::WorkgroupReduce;
      detail::LoopSite site;
      site.loop = &f;
      site.enclosing = enclosing_;
      const auto v = legality_at(routine_, &site, licensed);
      if (v.legality == Legality::Illegal)
        fail(f, "its iterations are not independent: " + v.reason, "Serial or Unrolled");
    }
    enclosing_.push_back(&f);
    stmt(f.body);
    enclosing_.pop_back();
    if (hardware) --depth;
  }
  [[noreturn]] void fail(const ir::For& f, const std::string& problem, const std::string& alternatives) const {
    detail::throw_schedule_error(routine_, f.index,
                                 "validate_parallel: loop " + detail::name_of(routine_, f.index), problem,
                                 alternatives);
  }
};

}  // namespace

void validate_parallel(const ir::LoweredRoutine& routine) {
  StructureChecker(routine).stmt(routine.body);
  // Annotated loops inside inlined computations: their scope is one scalar evaluation.
  ir::for_each_scalar(routine.body, [&](const ir::Scalar& s) {
    const auto* l = std::get_if<ir::LocalScope>(&s.node);
    if (!l) return;
    ir::for_each_stmt(l->body, [&](const ir::Stmt& x) {
      const auto* f = std::get_if<ir::For>(&x.node);
      if (f && f->axis != ir::AxisType::Serial && f->axis != ir::AxisType::Unrolled)
        detail::throw_schedule_error(routine, f->index, "validate_parallel: loop " + detail::name_of(routine, f->index),
                                     "an annotated loop inside an inlined computation (local scope)",
                                     "Serial or Unrolled");
    });
  });
}

}  // namespace cannl::schedule
