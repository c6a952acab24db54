// Common-subexpression elimination within one statement (semantics 4.9): while walking one
// statement's scalar tree in evaluation order, a LocalScope alpha-equivalent to one already
// evaluated at the same nesting level becomes a GetLocal of the earlier scope's local. Each
// statement and each scope body starts a fresh level, so a definition never leaks to a sibling
// statement or out of the block the C printer declares it in.
#include "cse.h"

#include "alpha_equivalence.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::opt {

namespace {

class StatementCse : public ir::TreeMapper {
 public:
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const bool has_scalars = std::holds_alternative<ir::Set>(s->node) ||
                             std::holds_alternative<ir::SetLocal>(s->node) ||
                             std::holds_alternative<ir::If>(s->node) ||
                             std::holds_alternative<ir::SetDynamic>(s->node);
    if (!has_scalars) return map_children(s);
    auto saved = std::move(seen_);
    seen_.clear();
    const ir::StmtRef out = map_children(s);
    seen_ = std::move(saved);
    return out;
  }

  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    const auto* l = std::get_if<ir::LocalScope>(&s->node);
    if (!l) return map_children(s);
    const ir::ScalarRef out = map_children(s);  // the body's statements get their own levels
    for (const ir::ScalarRef& earlier : seen_) {
      if (alpha_equivalent(earlier, out)) {
        const auto& e = std::get<ir::LocalScope>(earlier->node);
        return ir::get_local(e.scope_id, e.dtype);
      }
    }
    seen_.push_back(out);
    return out;
  }

 private:
  std::vector<ir::ScalarRef> seen_;  // scopes evaluated so far at this level
};

}  // namespace

ir::LoweredRoutine eliminate_common_subexpressions(const ir::LoweredRoutine& routine,
                                                   const PassContext& /*ctx*/) {
  ir::LoweredRoutine out = routine;
  if (routine.body) out.body = StatementCse().map_stmt(routine.body);
  return out;
}

}  // namespace cannl::opt
