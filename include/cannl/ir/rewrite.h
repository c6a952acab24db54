#pragma once
// Loop-IR rewriting helpers shared by the optimizer passes and the schedule transforms: index
// substitution, free-symbol queries, and a capture-avoiding replay that copies code with fresh
// loop symbols and fresh scope ids (the inliner's renaming, semantics-backend.md 4.5 step 4).
//
//   Replay r;  r.bind(s, AxisIndex::fixed(3));  ir::StmtRef copy = r.stmt(body);

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

/// `index` with every symbol in `values` replaced by its affine value (coefficients multiply):
///   substitute(2*i + 1, {i -> j + 3}) == 2*j + 7
ir::AxisIndex substitute(const ir::AxisIndex& index, const std::map<ir::Symbol, ir::AxisIndex>& values);

/// Symbols a scalar / statement uses but does not bind itself (loops inside are binders).
///   free_symbols(get(a, {i})) == {i}
std::set<ir::Symbol> free_symbols(const ir::ScalarRef& scalar);
std::set<ir::Symbol> free_symbols(const ir::StmtRef& stmt);

/// A read rewriter: returns the replacement of a Get, or nullopt to keep it.
using GetRewrite = std::function<std::optional<ir::ScalarRef>(const ir::Get&)>;

/// Copies `scalar` bottom-up, replacing reads as `rewrite` says (inside local scopes too).
///   map_gets(x, [&](const ir::Get& g) { return g.node == n ? local : std::nullopt; })
ir::ScalarRef map_gets(const ir::ScalarRef& scalar, const GetRewrite& rewrite);
/// The same over every scalar of a statement (values, conditions, dynamic rows).
ir::StmtRef map_gets(const ir::StmtRef& stmt, const GetRewrite& rewrite);

/// Capture-avoiding copy: bound symbols are substituted, loops and local scopes met inside get
/// fresh symbols and ids, and reads of `self` at any index become reads of local `self_local`.
class Replay {
 public:
  /// Replaces `s` by `value` wherever it occurs.   r.bind(i, AxisIndex::iterator(j))
  void bind(ir::Symbol s, ir::AxisIndex value) { symbols_[s] = std::move(value); }
  /// Reads of `node` become GetLocal(scope_id) (an accumulation reading its own cell).
  void redirect_self(ir::NodeRef node, int scope_id, ir::DType dtype) {
    self_ = std::move(node), self_scope_ = scope_id, self_dtype_ = dtype;
  }
  /// Copies a scalar / statement.
  ir::ScalarRef scalar(const ir::ScalarRef& s);
  ir::StmtRef stmt(const ir::StmtRef& s);
  /// Copies an index tuple under the current substitution.
  std::vector<ir::AxisIndex> index(const std::vector<ir::AxisIndex>& idx) const;
  /// A fresh loop symbol standing for `s` from now on.   Symbol t = r.freshen(s);
  ir::Symbol freshen(ir::Symbol s);
  /// The loops copied from now on take these symbols, in the order they are met, before fresh
  /// ones: symbols minted ahead, so that a plan can name the copies (schedule::partition).
  void take_symbols(std::vector<ir::Symbol> symbols) { taken_ = std::move(symbols), next_taken_ = 0; }
  /// How many loop symbols this replay has given out (taken or fresh).
  std::size_t symbols_given() const { return given_; }

 private:
  int scope(int id) const;
  std::map<ir::Symbol, ir::AxisIndex> symbols_;
  std::vector<ir::Symbol> taken_;
  std::size_t next_taken_ = 0, given_ = 0;
  std::map<int, int> scopes_;
  ir::NodeRef self_;
  int self_scope_ = 0;
  ir::DType self_dtype_ = ir::DType::F32;
};

}  // namespace cannl::ir
