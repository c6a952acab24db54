#pragma once
// Affine access relations of one loop's body (private to src/schedule): every access to a node
// with its index, whether it writes, whether a guard makes it conditional, and which recognized
// reduction it belongs to. The legality oracle compares them pairwise.
//
//   LoopAccesses acc = collect_accesses(routine, loop_site);

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "schedule/row_bucket.h"

namespace cannl::schedule::detail {

struct Access {
  ir::NodeRef node;
  std::vector<ir::AxisIndex> index;
  int dyn_axis = -1;          // >= 0: that axis is chosen at run time (ignored in proofs,
                              // unless `dyn_rows` bounds it)
  bool write = false;
  bool whole_node = false;    // ZeroOut
  bool guarded = false;       // under an If inside the loop
  std::vector<ir::ScalarRef> guards;  // the conditions of those Ifs, outermost first
  int reduction = -1;         // >= 0: part of recognized reduction number `reduction`
  /// A scatter directly under a row-bucket guard (row_bucket.h): its runtime row lies in
  /// [first, first + count), which proofs treat as first + u, u in [0, count) free per access.
  std::optional<RowRange> dyn_rows;
};

/// Inclusive value range of a symbol; unknown when unbounded (a static without a range).
struct SymbolRange { std::int64_t lo = 0, hi = 0; bool known = true; };

struct LoopAccesses {
  std::vector<Access> accesses;
  std::map<ir::Symbol, SymbolRange> inner;   // loops inside the analysed loop
  std::vector<std::string> shared_local_writes;  // locals set inside, declared outside the loop
  int reductions = 0;
};

/// Accesses of `body` (the analysed loop's body), TileMma fallbacks (and a zero-start tile's zeroing)
/// and local scopes included.
LoopAccesses collect_accesses(const ir::StmtRef& body);

/// Ranges of the symbols in scope at a loop: the routine's statics and the enclosing loops.
std::map<ir::Symbol, SymbolRange> symbol_ranges(const ir::LoweredRoutine& routine,
                                                const std::vector<const ir::For*>& enclosing);

/// True when some axis proves that `w` and `a` never reach the same cell in two iterations with
/// different values of `s`: the axis is c*s + rest in both and every difference of the rests lies
/// strictly inside (-|c|, |c|). A runtime row counts only when a bucket guard bounds it in both
/// (Access::dyn_rows). `inner`: loops nested in the analysed loop (independent per
/// access); `all`: ranges of the other symbols (one value for both accesses).
bool separated_by(const Access& w, const Access& a, ir::Symbol s,
                  const std::map<ir::Symbol, SymbolRange>& all,
                  const std::map<ir::Symbol, SymbolRange>& inner);

/// True when `w` and `a` provably reach the same cell in two different iterations of `s`
/// (`s_range`): either a whole-node zeroing, or the same index free of `s`, and both run there:
/// unguarded, or under guards `index < bound` (Split's and Pad's, conjunctions of them) that
/// hold at two iterations of `s` with the other symbols alike (`all`, `inner` as in
/// separated_by).
bool proven_conflict(const Access& w, const Access& a, ir::Symbol s, const SymbolRange& s_range,
                     const std::map<ir::Symbol, SymbolRange>& all,
                     const std::map<ir::Symbol, SymbolRange>& inner);

/// When `value` is a recognized accumulation into the cell `node[index]`, its accumulate op
/// (add, mul, max, min; fma's addend counts as add; sub only as d - v) and the position of that read among the
/// value's Gets of `node`; nullopt otherwise.
std::optional<ir::Op> accumulation_op(const ir::NodeRef& node, const std::vector<ir::AxisIndex>& index,
                                      const ir::ScalarRef& value);

}  // namespace cannl::schedule::detail
