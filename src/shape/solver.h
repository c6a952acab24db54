#pragma once
// The constraint solver (semantics-frontend.md 3.4-3.6): unification of dims and rows, the
// broadcasting inequalities, row constraints, and the fixpoint driver. Internal to src/shape/.

#include <vector>

#include "shape/state.h"

namespace cannl::shape {

/// Context of one solving pass: the stage (1..7) and where residual constraints go.
struct SolveCtx {
  int stage = 1;
  const Constraint* current = nullptr;  // for the origin of derived constraints

  const Origin* origin() const { return current ? current->origin.get() : nullptr; }
  /// Keeps `k` for a later pass without counting as progress (a fixed point of its own solving).
  void keep(Constraint k);
  /// Adds a newly derived constraint (counts as progress).
  void derive(Constraint k);
};

void bind_dim(int var, Dim value);
/// Binds a row variable; `minted_template` marks the value's row variable as a rank-expansion
/// template (always safe to close empty).
void bind_row(int var, Row value);

void unify_dim(const Dim& a, const Dim& b, SolveCtx& c);
void unify_row(const Row& a, const Row& b, SolveCtx& c);
void solve_dim_ineq(const Constraint& k, SolveCtx& c);
void solve_row_ineq(const Constraint& k, SolveCtx& c);
void solve_total_elems(const Constraint& k, SolveCtx& c);
/// Strided / convolution size relations (semantics 2.7); deferred until enough is known.
void solve_affine(const Constraint& k, SolveCtx& c);
/// `d1 = sum(parts)` (semantics 2.8); from stage 7 unconstrained discardable parts become 0.
void solve_concat(const Constraint& k, SolveCtx& c);

/// Runs every pending constraint to a fixpoint at `stage` (capped: never hangs).
void solve(int stage);
/// Applies the closing decisions of `stage` (3.7); returns whether anything was closed.
bool close_stage(int stage);

/// Builds a constraint: `make_dim(ConstraintKind::DimIneq, res, opnd, origin)`.
Constraint make_dim(ConstraintKind kind, const Dim& a, const Dim& b, OriginRef origin);
Constraint make_row(ConstraintKind kind, const Row& a, const Row& b, OriginRef origin);

}  // namespace cannl::shape
