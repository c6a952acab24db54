// The fixpoint driver (semantics-frontend.md 3.9 item 4) and GLB demotion (3.5): a dimension
// variable that must cover two different sizes becomes the broadcastable 1.

#include <map>

#include "cannl/support/error.h"
#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

constexpr std::size_t kMaxSteps = 10000000;

void solve_at_least(const Constraint& k, SolveCtx& c) {
  const Dim d = subst(k.d1);
  if (d.is_var()) return c.keep(k);
  if (d.size < k.n)
    shape_fail(c.origin(),
               "At_least_dim constraint failed, expected " + std::to_string(k.n) + " but the axis has size " +
                   dim_to_string(d) + " (a fixed index must be smaller than the axis size)",
               &k.d1);
}

void solve_one(const Constraint& k, SolveCtx& c) {
  c.current = &k;
  switch (k.kind) {
    case ConstraintKind::DimEq: return unify_dim(k.d1, k.d2, c);
    case ConstraintKind::RowEq: return unify_row(k.r1, k.r2, c);
    case ConstraintKind::DimIneq: return solve_dim_ineq(k, c);
    case ConstraintKind::RowIneq: return solve_row_ineq(k, c);
    case ConstraintKind::AtLeast: return solve_at_least(k, c);
    case ConstraintKind::TotalElems: return solve_total_elems(k, c);
    case ConstraintKind::Terminal: return c.keep(k);  // a marker for closing
    case ConstraintKind::Affine: return solve_affine(k, c);
    case ConstraintKind::Concat: return solve_concat(k, c);
  }
}

/// Binds to `1_bcast` every variable that is the operand of two inequalities with different
/// solved results: it must broadcast into both (deliberate, not an error).
bool demote_conflicting_glbs() {
  std::map<int, Dim> glb;
  std::map<int, bool> conflict;
  for (const auto& [seq, p] : state().pending) {
    const Constraint& k = *p;
    if (k.kind != ConstraintKind::DimIneq) continue;
    const Dim r = subst(k.d1), o = subst(k.d2);
    if (r.is_var() || !o.is_var()) continue;
    auto [it, fresh] = glb.emplace(o.var, r);
    if (!fresh && !it->second.same_value(r)) conflict[o.var] = true;
  }
  for (const auto& [var, yes] : conflict)
    if (yes) bind_dim(var, Dim::bcast_one());
  return !conflict.empty();
}

}  // namespace

void solve(int stage) {
  auto& s = state();
  // Later stages change what residuals do (closing rules), so they revisit everything once.
  if (stage >= 2)
    for (const auto& [seq, k] : s.pending) s.worklist.push_back(seq);
  const std::size_t budget = kMaxSteps + 100 * s.pending.size();
  std::size_t steps = 0;
  SolveCtx c{stage, nullptr};
  while (true) {
    while (!s.worklist.empty()) {
      const auto seq = s.worklist.front();
      s.worklist.pop_front();
      ConstraintRef k = take_pending(seq);
      if (!k) continue;
      if (++steps > budget)
        throw ShapeError("shape inference did not converge after " + std::to_string(budget) +
                         " steps; the constraints may describe rows of unbounded rank");
      try {
        solve_one(*k, c);
      } catch (...) {  // keep the failed constraint so the pending set stays complete
        add_pending(k, false);
        s.worklist.clear();
        throw;
      }
    }
    // Demotion only matters once closing starts; skipping it online keeps propagate cheap
    // (a conflict it would catch early still fails, later, as a mismatch).
    if (stage < 2 || !demote_conflicting_glbs()) return;
  }
}

}  // namespace cannl::shape
