// Cross-statement hoisting (semantics 4.9): among the statements of one Seq, a LocalScope whose
// alpha-equivalent copies appear in >= 2 of them is computed once, as DeclareLocal + its body
// placed before the first user, and every copy becomes a GetLocal of that local.
//
// A scope is hoisted only when moving its evaluation is invisible:
//  * its free loop symbols are bound where the Seq sits (enclosing loops, statics) and it reads
//    no local it does not bind, so it has one value across the users;
//  * no copy sits inside an If body (the guard may protect its reads);
//  * hazards: no statement from the first user to the last one (their nested loops and scope
//    bodies included) writes a node the scope reads.
// Runs after per-statement CSE, whose GetLocals of a replaced copy are renamed too. Seqs are
// handled innermost first; each hoist removes >= 2 LocalScopes, so the loop ends.
#include "hoist.h"

#include <algorithm>

#include "alpha_equivalence.h"
#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"
#include "hoist_facts.h"

namespace cannl::opt {

namespace {

// Replaces every copy of `target` by GetLocal(id), and GetLocals of the copies' ids (left by CSE).
class ReplaceCopies : public ir::TreeMapper {
 public:
  ReplaceCopies(const ir::ScalarRef& target, int id) : target_(target), id_(id) {}

  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    if (const auto* l = std::get_if<ir::LocalScope>(&s->node); l && alpha_equivalent(target_, s)) {
      replaced_.insert(l->scope_id);
      return ir::get_local(id_, l->dtype);
    }
    return map_children(s);
  }
  ir::StmtRef rename(const ir::StmtRef& s) {
    struct Rename : ir::TreeMapper {
      const std::set<int>& ids;
      int to;
      Rename(const std::set<int>& i, int t) : ids(i), to(t) {}
      ir::ScalarRef map_scalar(const ir::ScalarRef& x) override {
        const auto* g = std::get_if<ir::GetLocal>(&x->node);
        if (g && ids.contains(g->scope_id)) return ir::get_local(to, g->dtype);
        return map_children(x);
      }
    };
    const ir::StmtRef replaced = map_stmt(s);
    return replaced_.empty() ? replaced : Rename(replaced_, id_).map_stmt(replaced);
  }

 private:
  ir::ScalarRef target_;
  int id_;
  std::set<int> replaced_;
};

class Hoister : public ir::TreeMapper {
 public:
  explicit Hoister(const std::vector<ir::StaticSymbol>& statics) {
    for (const auto& s : statics) bound_.insert(s.symbol);
  }

  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* f = std::get_if<ir::For>(&s->node)) {
      bound_.insert(f->index);
      const ir::StmtRef out = map_children(s);
      bound_.erase(f->index);
      return out;
    }
    if (!std::holds_alternative<ir::Seq>(s->node)) return map_children(s);
    const ir::StmtRef inner = map_children(s);  // nested Seqs first
    // Statements of nested Seqs are siblings too (a Seq opens no C block).
    std::vector<ir::StmtRef> stmts;
    flatten(inner, stmts);
    bool changed = false;
    while (hoist_one(stmts)) changed = true;
    return changed ? ir::seq(std::move(stmts)) : inner;
  }

 private:
  std::set<ir::Symbol> bound_;  // loop symbols and statics in scope at the current statement

  static void flatten(const ir::StmtRef& s, std::vector<ir::StmtRef>& out) {
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts) flatten(x, out);
    } else {
      out.push_back(s);
    }
  }

  // Hoists the first hoistable scope of `stmts`, if any.
  bool hoist_one(std::vector<ir::StmtRef>& stmts) {
    std::vector<std::vector<ScopeUse>> uses;
    for (const auto& s : stmts) uses.push_back(scope_uses(s));
    for (std::size_t i = 0; i < stmts.size(); ++i) {
      for (const ScopeUse& u : uses[i]) {
        if (u.under_if || !self_contained(u.scope)) continue;
        const auto users = users_of(u.scope, u.shape, uses, i);
        if (users && users->size() >= 2 && hazard_free(u.scope, stmts, users->front(), users->back())) {
          apply(u.scope, *users, stmts);
          return true;
        }
      }
    }
    return false;
  }

  bool self_contained(const ir::ScalarRef& scope) const {
    for (const ir::Symbol& s : free_symbols(scope))
      if (!bound_.contains(s)) return false;
    return free_locals(scope).empty();
  }

  // Statements holding a copy of `scope` (the first is `first`), or nullopt when a copy sits
  // under an If or an earlier statement holds one (it was considered then).
  static std::optional<std::vector<std::size_t>> users_of(const ir::ScalarRef& scope, std::size_t shape,
                                                          const std::vector<std::vector<ScopeUse>>& uses,
                                                          std::size_t first) {
    std::vector<std::size_t> users;
    for (std::size_t j = 0; j < uses.size(); ++j) {
      bool user = false;
      for (const ScopeUse& v : uses[j]) {
        if (v.shape != shape || !alpha_equivalent(scope, v.scope)) continue;
        if (v.under_if || j < first) return std::nullopt;
        user = true;
      }
      if (user) users.push_back(j);
    }
    return users;
  }

  static bool hazard_free(const ir::ScalarRef& scope, const std::vector<ir::StmtRef>& stmts,
                          std::size_t first, std::size_t last) {
    std::set<int> read;
    for (const auto& n : ir::nodes_of(scope)) read.insert(n->id);
    for (std::size_t j = first; j <= last; ++j)
      for (int id : written_nodes(stmts[j]))
        if (read.contains(id)) return false;
    return true;
  }

  static void apply(const ir::ScalarRef& scope, const std::vector<std::size_t>& users,
                    std::vector<ir::StmtRef>& stmts) {
    const auto& l = std::get<ir::LocalScope>(scope->node);
    for (std::size_t j : users) stmts[j] = ReplaceCopies(scope, l.scope_id).rename(stmts[j]);
    const auto at = stmts.begin() + static_cast<std::ptrdiff_t>(users.front());
    stmts.insert(at, {ir::declare_local(l.scope_id, l.dtype, local_needs_init(l.body, l.scope_id)), l.body});
  }
};

}  // namespace

ir::LoweredRoutine hoist_cross_statement_cse(const ir::LoweredRoutine& routine, const PassContext& /*ctx*/) {
  ir::LoweredRoutine out = routine;
  if (routine.body) out.body = Hoister(routine.statics).map_stmt(routine.body);
  return out;
}

}  // namespace cannl::opt
