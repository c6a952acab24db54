// Broadcasting inequalities `res ⊑ opnd` and row constraints (semantics-frontend.md 3.5-3.6).
// Residual forms are fixed points of their own solving, so the driver detects progress exactly:
//   Dim:  solved ⊑ var (a GLB candidate), var ⊑ var.
//   Row:  closed R ⊑ <w> (a GLB candidate), open ⊑ <w> (an edge), and deferred leading flanks.

#include <numeric>

#include "cannl/support/checked.h"
#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

constexpr const char* kTooManyAxes = "Too many axes in an operand; maybe using * instead of pointmul?";

OriginRef origin_of(const SolveCtx& c) { return c.current ? c.current->origin : nullptr; }

/// Pairs the trailing axes of `res` and `opnd` from the right (opnd.size() <= res.size()).
void pair_from_right(const std::vector<Dim>& res, const std::vector<Dim>& opnd, SolveCtx& c) {
  for (std::size_t i = 1; i <= opnd.size(); ++i)
    c.derive(make_dim(ConstraintKind::DimIneq, res[res.size() - i], opnd[opnd.size() - i],
                      origin_of(c)));
}

std::string rows_pair(const Row& a, const Row& b) {
  return " (result row " + row_to_string(a) + ", operand row " + row_to_string(b) + ")";
}

/// The result row is closed: the operand may have fewer axes (or extra broadcastable 1s).
void closed_result(const std::vector<Dim>& res, const Row& o, const Constraint& k, SolveCtx& c) {
  if (!o.is_open()) {
    std::vector<Dim> opnd = o.dims;
    if (opnd.size() > res.size()) {
      const std::size_t extra = opnd.size() - res.size();
      for (std::size_t i = 0; i < extra; ++i)
        if (!opnd[i].is_bcast_one())
          shape_fail(c.origin(), kTooManyAxes + rows_pair(Row::closed(res), o), &opnd[i]);
      opnd.erase(opnd.begin(), opnd.begin() + static_cast<long>(extra));
    }
    return pair_from_right(res, opnd, c);
  }
  if (o.num_explicit() > res.size())
    shape_fail(c.origin(), kTooManyAxes + rows_pair(Row::closed(res), o));
  pair_from_right(res, o.dims, c);
  const std::vector<Dim> rest(res.begin(), res.end() - static_cast<long>(o.dims.size()));
  if (o.beg.empty()) {
    // The operand row can hold at most what remains of the result: its GLB.
    if (rest.empty()) return bind_row(o.var, Row::closed({}));
    Constraint glb = make_row(ConstraintKind::RowIneq, Row::closed(rest), Row::open(o.var), k.origin);
    return o.dims.empty() ? c.keep(std::move(glb)) : c.derive(std::move(glb));
  }
  // Leading operand axes: where they land depends on the operand's unknown middle.
  if (c.stage >= 6) {
    bind_row(o.var, Row::closed({}));
    return c.derive(k);
  }
  Constraint deferred = make_row(ConstraintKind::RowIneq, Row::closed(rest), Row{o.beg, o.var, {}}, k.origin);
  return o.dims.empty() ? c.keep(std::move(deferred)) : c.derive(std::move(deferred));
}

/// Rank expansion: an open result gets fresh trailing axes so it has as many as the operand.
void expand_result(const Row& r, std::size_t deficit) {
  Row value;
  value.var = fresh_var();
  update_row_info(value.var).is_template = true;
  for (std::size_t i = 0; i < deficit; ++i) value.dims.push_back(Dim::variable(fresh_var()));
  bind_row(r.var, value);
}

}  // namespace

void solve_dim_ineq(const Constraint& k, SolveCtx& c) {
  const Dim r = subst(k.d1), o = subst(k.d2);
  if (r.same_value(o) || o.is_bcast_one()) return;
  if (!r.is_var() && !o.is_var()) {
    const std::string pair = " (" + dim_to_string(r) + " ⊑ " + dim_to_string(o) + ")";
    if (!(r.basis == o.basis) && r.size == o.size)
      shape_fail(c.origin(), "dimension comparison for axis: different bases" + pair, &k.d1, &k.d2);
    shape_fail(c.origin(),
               "dimension comparison for axis: mismatch" + pair +
                   "; an operand axis broadcasts only when it is a broadcastable 1",
               &k.d1, &k.d2);
  }
  if (r.is_bcast_one()) return unify_dim(o, r, c);
  if (!o.is_var()) return unify_dim(r, o, c);
  c.keep(make_dim(ConstraintKind::DimIneq, r, o, k.origin));
}

void solve_row_ineq(const Constraint& k, SolveCtx& c) {
  const Row r = subst(k.r1), o = subst(k.r2);
  if (!r.is_open()) return closed_result(r.dims, o, k, c);
  if (o.dims.size() > r.dims.size()) {
    expand_result(r, o.dims.size() - r.dims.size());
    return c.derive(k);
  }
  pair_from_right(r.dims, o.dims, c);
  if (!o.is_open()) return;
  Row rest = r;
  rest.dims.resize(r.dims.size() - o.dims.size());
  Constraint edge = make_row(ConstraintKind::RowIneq, rest, Row{o.beg, o.var, {}}, k.origin);
  if (c.stage >= 6 && !o.beg.empty()) {
    bind_row(o.var, Row::closed({}));
    return c.derive(k);
  }
  o.dims.empty() ? c.keep(std::move(edge)) : c.derive(std::move(edge));
}

void solve_total_elems(const Constraint& k, SolveCtx& c) {
  std::int64_t known = 1;
  std::size_t axes = 0;  // known and unknown, over all rows
  std::vector<int> unknown_dims, open_rows;
  std::vector<Row> rows;
  for (const auto& r0 : k.rows) {
    rows.push_back(subst(r0));
    for (const auto& d : rows.back().axes()) {
      ++axes;
      if (d.is_var()) {
        unknown_dims.push_back(d.var);
        continue;
      }
      const auto product = checked_mul(known, d.size);
      if (!product)
        shape_fail(c.origin(), "Total_elems constraint: size overflow: the known axes' product (" +
                                   std::to_string(known) + " x " + std::to_string(d.size) +
                                   ") exceeds the 64-bit range", &d);
      known = *product;
    }
    if (rows.back().is_open()) open_rows.push_back(static_cast<int>(rows.size() - 1));
  }
  const std::string data = "Total_elems constraint: the data has " + std::to_string(k.n) + " elements";
  if (open_rows.empty() && unknown_dims.empty()) {
    if (known != k.n) shape_fail(c.origin(), data + " but the shape has " + std::to_string(known));
    return;
  }
  if (known == 0) return k.n == 0 ? c.keep(k) : shape_fail(c.origin(), data + " but an axis has size 0");
  if (k.n % known != 0)
    shape_fail(c.origin(), data + ", not divisible by the known axes (" + std::to_string(known) + ")");
  const std::int64_t rest = k.n / known;
  if (open_rows.empty() && unknown_dims.size() == 1) return bind_dim(unknown_dims[0], Dim::solved(rest));
  if (c.stage >= 5 && unknown_dims.empty()) {
    if (open_rows.size() == 1) {
      const int v = rows[static_cast<std::size_t>(open_rows[0])].var;
      // The leftover row takes the remaining size as one axis. A remaining 1 needs no axis when
      // other axes hold the data, but 1-element data with no axis at all keeps one axis of size
      // 1 (the identity-reshape preference): closing it to rank 0 would turn data into a scalar.
      const bool keep_axis = rest != 1 || axes == 0;
      bind_row(v, Row::closed(keep_axis ? std::vector<Dim>{Dim::solved(rest)} : std::vector<Dim>{}));
      return;
    }
    // Several open rows: keep the output row (index 1 in batch@output@input), close the others.
    for (int i : open_rows)
      if (i != 1) bind_row(rows[static_cast<std::size_t>(i)].var, Row::closed({}));
    return c.derive(k);
  }
  c.keep(k);
}

}  // namespace cannl::shape
