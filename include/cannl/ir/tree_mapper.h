#pragma once
// A rebuilding walk over loop-IR trees for the rewrite passes: override map_scalar / map_stmt
// for the forms a pass changes and call map_children for the rest. Unchanged subtrees keep their
// shared pointers, so a pass that changes nothing returns the very same tree.
//
//   struct DropComments : TreeMapper {
//     ir::StmtRef map_stmt(const ir::StmtRef& s) override {
//       return std::holds_alternative<ir::Comment>(s->node) ? ir::seq({}) : map_children(s);
//     }
//   };

#include <functional>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

class TreeMapper {
 public:
  virtual ~TreeMapper() = default;
  /// The rewritten scalar; the default rewrites the children.
  virtual ir::ScalarRef map_scalar(const ir::ScalarRef& s) { return map_children(s); }
  /// The rewritten statement; the default rewrites the children.
  virtual ir::StmtRef map_stmt(const ir::StmtRef& s) { return map_children(s); }

 protected:
  /// `s` with every child scalar and statement passed through map_scalar / map_stmt.
  ir::ScalarRef map_children(const ir::ScalarRef& s);
  ir::StmtRef map_children(const ir::StmtRef& s);
};

/// Calls `fn` on every scalar of the tree, outermost first (including scope bodies' scalars).
/// for_each_scalar(stmt, [&](const ir::Scalar& s) { ... })
void for_each_scalar(const ir::StmtRef& stmt, const std::function<void(const ir::Scalar&)>& fn);
void for_each_scalar(const ir::ScalarRef& scalar, const std::function<void(const ir::Scalar&)>& fn);
/// Calls `fn` on every statement of the tree, outermost first (including scope bodies).
void for_each_stmt(const ir::StmtRef& stmt, const std::function<void(const ir::Stmt&)>& fn);

/// How many GetLocal of `scope_id` the scalar contains. count_local_reads(get_local(3, F32), 3) == 1
int count_local_reads(const ir::ScalarRef& scalar, int scope_id);

}  // namespace cannl::ir
