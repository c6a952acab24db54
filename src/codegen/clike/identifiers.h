#pragma once
// C identifiers for the nodes and static symbols of one routine, derived from their labels.
//
// Labels are sanitized to C identifiers; a name that would collide with a C keyword, a libm or
// libc function, a prelude helper (`cannl_*`) or a generated local (`i<k>` loops, `v<k>` locals)
// gets a trailing `_`; nodes sharing a label all get `_n<id>` so no name depends on visit order.
//
//   IdentifierTable t(c_reserved_words());
//   t.assign(nodes, statics);  t.node(*w) == "w1";  // a second "w1" node: "w1_n7"

#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cannl/ir/indexing.h"
#include "cannl/ir/tensor_node.h"

namespace cannl::codegen {

/// `label` with every character outside [A-Za-z0-9_] replaced by `_`, runs of `_` collapsed, and
/// a leading digit prefixed by `t_`; empty input gives "". sanitize_identifier("w-1.x") == "w_1_x"
std::string sanitize_identifier(std::string_view label);

/// Keywords, library names and the headers' object-like macros (INT32_MAX) reserved in every
/// C-family dialect.
std::set<std::string> c_reserved_words();

class IdentifierTable {
 public:
  explicit IdentifierTable(std::set<std::string> reserved) : reserved_(std::move(reserved)) {}

  /// Names every node (in order) and static symbol; call once.
  void assign(const std::vector<ir::NodeRef>& nodes, const std::vector<ir::StaticSymbol>& statics);
  /// Names the nodes by position, `b0`, `b1`, ..., and the statics `s0`, `s1`, ...: the text of
  /// a kernel printed with them depends on what it computes, not on which nodes it was given.
  void assign_positional(const std::vector<ir::NodeRef>& nodes, const std::vector<ir::StaticSymbol>& statics);
  /// Identifier of an assigned node; InternalError for an unknown node.
  const std::string& node(const ir::TensorNode& node) const;
  /// Identifier of an assigned static symbol, or nullptr.
  const std::string* static_symbol(ir::Symbol symbol) const;
  /// True when `name` is reserved (keywords, library names, helpers, generated locals).
  bool is_reserved(const std::string& name) const;

 private:
  std::string unique(std::string base);

  std::set<std::string> reserved_;
  std::set<std::string> used_;
  std::unordered_map<int, std::string> nodes_;
  std::unordered_map<int, std::string> statics_;
};

}  // namespace cannl::codegen
