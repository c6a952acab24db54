#pragma once
// Alpha-equivalence of loop-IR scalars and statements (semantics 4.9, 0.8 "Fixed"): structural
// equality modulo renaming of names bound INSIDE the compared trees (For symbols, LocalScope and
// DeclareLocal scope ids). Renamings are registered only at those binder sites and kept as a
// partial bijection (forward and reverse maps); free names must match exactly. A forward-only map
// registered at use sites once judged t[i, j] equal to t[i, i]; see cse_test.cpp.
//
//   alpha_equivalent(scope_a, scope_b)   // {for j: v += t[i, j]} vs {for k: v += t[i, k]}: true

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// True when `a` and `b` compute the same value under a bijective renaming of their binders.
/// Comments and Set comments are ignored. alpha_equivalent(get(t, {i}), get(t, {i})) == true
bool alpha_equivalent(const ir::ScalarRef& a, const ir::ScalarRef& b);
/// The statement form: alpha_equivalent(for_loop(j, 0, 4, s1), for_loop(k, 0, 4, s2)).
bool alpha_equivalent(const ir::StmtRef& a, const ir::StmtRef& b);

}  // namespace cannl::opt
