#pragma once
// Loop-tree helpers shared by the schedule transforms (private to src/schedule): finding a loop
// by symbol with its enclosing loops, rebuilding a tree with one loop replaced, substituting an
// index symbol, and the canonical loop names i0, i1, ... the printer and the traces use.
//
//   auto site = find_loop(routine.body, s);   // site->loop, site->enclosing
//   ir::StmtRef body = replace_loop(routine.body, s, [](const ir::For& f) { return f.body; });

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// A loop found in a tree: the loop and the loops around it, outermost first.
struct LoopSite {
  const ir::For* loop = nullptr;
  ir::StmtRef stmt;                     // the statement holding `loop`
  std::vector<const ir::For*> enclosing;
  bool in_local_scope = false;          // inside an inlined computation's body
  bool in_tile = false;                 // inside a TileMma fallback
  bool under_if = false;                // inside an If body
};

/// The loop bound by `s`, or nullopt.
std::optional<LoopSite> find_loop(const ir::StmtRef& root, ir::Symbol s);

/// Every loop's site in one walk, in preorder (the order ir::for_each_stmt meets them):
///   for (const LoopSite& site : loop_sites(body)) ... site.loop, site.enclosing ...
std::vector<LoopSite> loop_sites(const ir::StmtRef& root);

/// `root` with the loop bound by `s` replaced by `rewrite(loop)`; unchanged subtrees are shared.
ir::StmtRef replace_loop(const ir::StmtRef& root, ir::Symbol s,
                         const std::function<ir::StmtRef(const ir::For&)>& rewrite);

/// `stmt` with every use of `s` (indices, embedded indices, tile descriptors) replaced by `value`.
ir::StmtRef substitute_symbol(const ir::StmtRef& stmt, ir::Symbol s, const ir::AxisIndex& value);

/// Loop symbols in the order the loop-IR printer names them i0, i1, ... (statics excluded).
std::vector<ir::Symbol> canonical_loops(const ir::StmtRef& root);
/// The printed name of the loop bound by `s` ("i3"), or "?" when it is not in `root`.
std::string loop_name(const ir::StmtRef& root, ir::Symbol s);
/// The loop printed as `name` ("i3"), or nullopt.
std::optional<ir::Symbol> loop_named(const ir::StmtRef& root, const std::string& name);

/// Every statement directly under a loop body, flattening nested Seqs.
using ir::flatten_seq;
/// The loops of the perfect nest under `top` (top included, outermost first); `leaf` is set to
/// the innermost loop's only statement (left unset when the top loop's body is not one statement).
std::vector<const ir::For*> perfect_nest(const ir::For& top, ir::StmtRef& leaf);
/// A perfect nest of Serial loops around one store: the shape every nest planner starts from.
struct StoreNest {
  std::vector<const ir::For*> loops;  // outermost first
  const ir::Set* store = nullptr;
};
/// The nest under `top` when it has at least `min_loops` loops, all Serial, around one Set.
std::optional<StoreNest> serial_store_nest(const ir::For& top, std::size_t min_loops);

}  // namespace cannl::schedule::detail
