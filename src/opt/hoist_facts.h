#pragma once
// Facts the cross-statement hoisting pass (hoist.cpp) decides with (private to src/opt): where
// the LocalScopes of a statement sit, which names a scope needs from outside, what statements
// write, and whether a scope's local must start from zero.
//
//   auto uses = scope_uses(stmt);   // every LocalScope of stmt, with "under an If body" flags

#include <set>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::opt {

/// One LocalScope occurrence inside a statement.
struct ScopeUse {
  ir::ScalarRef scope;      // holds an ir::LocalScope
  bool under_if = false;    // inside the body of an If (a conditional evaluation)
  std::size_t shape = 0;    // shape_hash(scope): equal for alpha-equivalent scopes
};

/// A hash of a scalar's structure that ignores symbols and scope ids, so alpha-equivalent
/// scalars hash equal (a cheap filter before alpha_equivalent).
///   shape_hash(get(t, {i})) == shape_hash(get(t, {j}))
std::size_t shape_hash(const ir::ScalarRef& scalar);

/// Every LocalScope in `stmt`, outermost first, nested scopes included.
///   scope_uses(set(o, {}, local_scope(...))).size() == 1
std::vector<ScopeUse> scope_uses(const ir::StmtRef& stmt);

/// Scope ids a scalar reads or writes without binding them (LocalScope and DeclareLocal bind):
///   free_locals(get_local(3, F32)) == {3}
std::set<int> free_locals(const ir::ScalarRef& scalar);

/// Ids of the nodes a statement may write (Set, SetDynamic, ZeroOut, at any depth).
///   written_nodes(zero_out(a)) == {a->id}
std::set<int> written_nodes(const ir::StmtRef& stmt);

/// True when `body` may read local `scope_id` before a definite SetLocal of it (a loop may run
/// zero times and an If may not run, so neither makes a write definite), or never sets it: the
/// local must then start from zero. needs_init(set_local(v, constant(1, F32)), v) == false
bool local_needs_init(const ir::StmtRef& body, int scope_id);

}  // namespace cannl::opt
