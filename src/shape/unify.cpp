// Equations (semantics-frontend.md 3.4): strict unification of dims and rows, with the occurs
// check for row variables ("Infinite number of axes by self-reference").

#include "cannl/support/error.h"
#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {

void SolveCtx::derive(Constraint k) {
  state().changed = true;
  add_pending(std::make_shared<const Constraint>(std::move(k)), true);
}

namespace {
void watch_row(const Row& r0, std::vector<int>& watch) {
  const Row r = subst(r0);
  if (r.is_open()) watch.push_back(r.var);
  for (const auto* axes : {&r.beg, &r.dims})
    for (const auto& d : *axes)
      if (d.is_var()) watch.push_back(d.var);
}
}  // namespace

void SolveCtx::keep(Constraint k) {
  k.watch.clear();
  for (const auto* d : {&k.d1, &k.d2, &k.d3})
    if (const Dim v = subst(*d); v.is_var()) k.watch.push_back(v.var);
  for (const auto& d : k.parts)
    if (const Dim v = subst(d); v.is_var()) k.watch.push_back(v.var);
  watch_row(k.r1, k.watch);
  watch_row(k.r2, k.watch);
  for (const auto& r : k.rows) watch_row(r, k.watch);
  add_pending(std::make_shared<const Constraint>(std::move(k)), false);
}

Constraint make_dim(ConstraintKind kind, const Dim& a, const Dim& b, OriginRef origin) {
  Constraint k;
  k.kind = kind;
  k.d1 = a;
  k.d2 = b;
  k.origin = std::move(origin);
  return k;
}

Constraint make_row(ConstraintKind kind, const Row& a, const Row& b, OriginRef origin) {
  Constraint k;
  k.kind = kind;
  k.r1 = a;
  k.r2 = b;
  k.origin = std::move(origin);
  return k;
}

void bind_dim(int var, Dim value) {
  value = subst(value);
  if (value.is_var() && value.var == var) return;
  value.label_step = value.label_pos = -1;  // provenance belongs to occurrences, not solutions
  auto& s = state();
  s.dim_solution[var] = value;
  if (s.trail.active) s.trail.dims.push_back(var);
  s.changed = true;
  wake(var);
}

void bind_row(int var, Row value) {
  auto& s = state();
  value = subst(value);
  internal_check(value.var != var, "row variable bound to a row containing itself");
  if (value.is_open() && row_info(var).used_in_spec && !row_info(value.var).used_in_spec)
    update_row_info(value.var).used_in_spec = true;
  s.row_solution[var] = std::move(value);
  if (s.trail.active) s.trail.rows.push_back(var);
  s.changed = true;
  wake(var);
}

void unify_dim(const Dim& a0, const Dim& b0, SolveCtx& c) {
  const Dim a = subst(a0), b = subst(b0);
  if (a.same_value(b)) return;
  if (a.is_var()) return bind_dim(a.var, b);
  if (b.is_var()) return bind_dim(b.var, a);
  const std::string pair = " (" + dim_to_string(a) + " vs " + dim_to_string(b) + ")";
  if (!(a.basis == b.basis))
    shape_fail(c.origin(), "solved dimensions for axis: different bases" + pair + " [" +
                               a.basis.to_string() + " vs " + b.basis.to_string() + "]",
               &a0, &b0);
  shape_fail(c.origin(), "solved dimensions for axis: mismatch" + pair, &a0, &b0);
}

namespace {

std::string rows_pair(const Row& a, const Row& b) {
  return " (" + row_to_string(a) + " vs " + row_to_string(b) + ")";
}

void unify_same_var(const Row& a, const Row& b, SolveCtx& c) {
  if (a.num_explicit() != b.num_explicit())
    shape_fail(c.origin(), "Infinite number of axes by self-reference" + rows_pair(a, b));
  if (a.beg.size() == b.beg.size()) {
    for (std::size_t i = 0; i < a.beg.size(); ++i) unify_dim(a.beg[i], b.beg[i], c);
    for (std::size_t i = 0; i < a.dims.size(); ++i) unify_dim(a.dims[i], b.dims[i], c);
    return;
  }
  if (c.stage >= 6) {  // shifted flanks around the same variable: only the empty middle is finite
    bind_row(a.var, Row::closed({}));
    return unify_row(a, b, c);
  }
  c.keep(make_row(ConstraintKind::RowEq, a, b, c.current ? c.current->origin : nullptr));
}

void unify_open_closed(const Row& a, const std::vector<Dim>& b, SolveCtx& c) {
  if (a.num_explicit() > b.size())
    shape_fail(c.origin(), "Number of axes mismatch" + rows_pair(a, Row::closed(b)),
               a.beg.empty() ? (a.dims.empty() ? nullptr : &a.dims[0]) : &a.beg[0]);
  for (std::size_t i = 0; i < a.beg.size(); ++i) unify_dim(a.beg[i], b[i], c);
  const std::size_t tail = b.size() - a.dims.size();
  for (std::size_t i = 0; i < a.dims.size(); ++i) unify_dim(a.dims[i], b[tail + i], c);
  bind_row(a.var, Row::closed(std::vector<Dim>(b.begin() + static_cast<long>(a.beg.size()),
                                                b.begin() + static_cast<long>(tail))));
}

std::vector<Dim> slice(const std::vector<Dim>& v, std::size_t from, std::size_t to) {
  return std::vector<Dim>(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to));
}

int fresh_row_var(int like_a, int like_b) {
  const int z = fresh_var();
  RowVarInfo& info = update_row_info(z);
  info.used_in_spec = row_info(like_a).used_in_spec || row_info(like_b).used_in_spec;
  info.is_template = row_info(like_a).is_template && row_info(like_b).is_template;
  return z;
}

/// `b1·<v>·d1 = b2·<w>·d2` with v != w: align the outer flanks, then the most general unifier.
void unify_open_open(const Row& a, const Row& b, SolveCtx& c) {
  const std::size_t k = std::min(a.beg.size(), b.beg.size());
  for (std::size_t i = 0; i < k; ++i) unify_dim(a.beg[i], b.beg[i], c);
  const std::size_t m = std::min(a.dims.size(), b.dims.size());
  for (std::size_t i = 1; i <= m; ++i) unify_dim(a.dims[a.dims.size() - i], b.dims[b.dims.size() - i], c);
  const auto b1 = slice(a.beg, k, a.beg.size()), b2 = slice(b.beg, k, b.beg.size());
  const auto d1 = slice(a.dims, 0, a.dims.size() - m), d2 = slice(b.dims, 0, b.dims.size() - m);
  if (b1.empty() && d1.empty()) return bind_row(a.var, Row{b2, b.var, d2});
  if (b2.empty() && d2.empty()) return bind_row(b.var, Row{b1, a.var, d1});
  const int z = fresh_row_var(a.var, b.var);
  if (b1.empty()) {  // X·d1 = b2·Y
    bind_row(a.var, Row{b2, z, {}});
    bind_row(b.var, Row{{}, z, d1});
  } else {  // b1·X = Y·d2
    bind_row(b.var, Row{b1, z, {}});
    bind_row(a.var, Row{{}, z, d2});
  }
}

}  // namespace

void unify_row(const Row& a0, const Row& b0, SolveCtx& c) {
  Row a = subst(a0), b = subst(b0);
  if (!a.is_open() && !b.is_open()) {
    if (a.dims.size() != b.dims.size())
      shape_fail(c.origin(), "Mismatching number of axes" + rows_pair(a, b));
    for (std::size_t i = 0; i < a.dims.size(); ++i) unify_dim(a.dims[i], b.dims[i], c);
    return;
  }
  if (a.is_open() && b.is_open() && a.var == b.var) return unify_same_var(a, b, c);
  if (!a.is_open()) std::swap(a, b);
  if (!b.is_open()) return unify_open_closed(a, b.dims, c);
  unify_open_open(a, b, c);
}

}  // namespace cannl::shape
