// Facts for cross-statement hoisting (see hoist_facts.h).
#include "hoist_facts.h"

#include "cannl/ir/tree_mapper.h"

namespace cannl::opt {

namespace {

// Walks statements and scalars in evaluation order, knowing whether it is inside an If body.
class UseCollector {
 public:
  std::vector<ScopeUse> uses;

  void stmt(const ir::StmtRef& s, bool under_if) {
    if (!s) return;
    std::visit([&](const auto& x) { visit(x, under_if); }, s->node);
  }

 private:
  void scalar(const ir::ScalarRef& s, bool under_if) {
    if (!s) return;
    if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) {
      uses.push_back({s, under_if, shape_hash(s)});
      stmt(l->body, under_if);
    } else if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
      for (const auto& x : a->args) scalar(x, under_if);
    } else if (const auto* g = std::get_if<ir::GetDynamic>(&s->node)) {
      scalar(g->dyn_value, under_if);
    }
  }
  void visit(const ir::Seq& q, bool u) { for (const auto& x : q.stmts) stmt(x, u); }
  void visit(const ir::For& f, bool u) { stmt(f.body, u); }
  void visit(const ir::Set& x, bool u) { scalar(x.value, u); }
  void visit(const ir::SetLocal& x, bool u) { scalar(x.value, u); }
  // The condition is evaluated whenever the If is reached; only the body is conditional.
  void visit(const ir::If& x, bool u) { scalar(x.condition, u); stmt(x.body, true); }
  void visit(const ir::SetDynamic& x, bool u) { scalar(x.dyn_value, u); scalar(x.value, u); }
  void visit(const ir::TileMma& x, bool u) { stmt(x.fallback, u); }
  void visit(const auto&, bool) {}  // Comment, ZeroOut, DeclareLocal, Barrier
};

bool reads_local(const ir::ScalarRef& s, int scope_id) { return count_local_reads(s, scope_id) > 0; }

bool stmt_reads_local(const ir::StmtRef& s, int scope_id) {
  bool found = false;
  for_each_scalar(s, [&](const ir::Scalar& x) {
    if (const auto* g = std::get_if<ir::GetLocal>(&x.node); g && g->scope_id == scope_id) found = true;
  });
  return found;
}

// The result of scanning statements in order: the local was read first, set first, or neither.
enum class FirstAccess { None, Read, Set };

FirstAccess first_access(const ir::StmtRef& s, int scope_id) {
  if (!s) return FirstAccess::None;
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    for (const auto& x : q->stmts) {
      const FirstAccess a = first_access(x, scope_id);
      if (a != FirstAccess::None) return a;
    }
    return FirstAccess::None;
  }
  if (const auto* l = std::get_if<ir::SetLocal>(&s->node); l && l->scope_id == scope_id)
    return reads_local(l->value, scope_id) ? FirstAccess::Read : FirstAccess::Set;
  // Anything else (a loop, an If, another statement) never sets it definitely.
  return stmt_reads_local(s, scope_id) ? FirstAccess::Read : FirstAccess::None;
}

void mix(std::size_t& h, std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

void mix_index(std::size_t& h, const std::vector<ir::AxisIndex>& index) {
  for (const auto& i : index) {
    mix(h, static_cast<std::size_t>(i.offset));
    for (const auto& t : i.terms) mix(h, static_cast<std::size_t>(t.coeff));
  }
}

}  // namespace

std::size_t shape_hash(const ir::ScalarRef& scalar) {
  std::size_t h = 0;
  for_each_scalar(scalar, [&](const ir::Scalar& s) {
    mix(h, s.node.index());
    if (const auto* a = std::get_if<ir::Apply>(&s.node)) mix(h, static_cast<std::size_t>(a->op));
    if (const auto* g = std::get_if<ir::Get>(&s.node)) {
      mix(h, static_cast<std::size_t>(g->node->id));
      mix_index(h, g->index);
    }
    if (const auto* c = std::get_if<ir::Constant>(&s.node)) mix(h, std::hash<double>{}(c->value));
  });
  for_each_stmt(std::get_if<ir::LocalScope>(&scalar->node) ? std::get<ir::LocalScope>(scalar->node).body : nullptr,
                [&](const ir::Stmt& s) {
                  mix(h, s.node.index());
                  if (const auto* f = std::get_if<ir::For>(&s.node)) mix(h, static_cast<std::size_t>(f->end - f->begin));
                });
  return h;
}

std::vector<ScopeUse> scope_uses(const ir::StmtRef& stmt) {
  UseCollector c;
  c.stmt(stmt, false);
  return c.uses;
}

std::set<int> free_locals(const ir::ScalarRef& scalar) {
  std::set<int> used, bound;
  for_each_scalar(scalar, [&](const ir::Scalar& s) {
    if (const auto* g = std::get_if<ir::GetLocal>(&s.node)) used.insert(g->scope_id);
    if (const auto* l = std::get_if<ir::LocalScope>(&s.node)) bound.insert(l->scope_id);
    if (const auto* l = std::get_if<ir::LocalScope>(&s.node)) {
      for_each_stmt(l->body, [&](const ir::Stmt& st) {
        if (const auto* w = std::get_if<ir::SetLocal>(&st.node)) used.insert(w->scope_id);
        if (const auto* d = std::get_if<ir::DeclareLocal>(&st.node)) bound.insert(d->scope_id);
      });
    }
  });
  std::set<int> out;
  for (int id : used)
    if (!bound.contains(id)) out.insert(id);
  return out;
}

std::set<int> written_nodes(const ir::StmtRef& stmt) {
  std::set<int> out;
  for_each_stmt(stmt, [&](const ir::Stmt& s) {
    if (const auto* x = std::get_if<ir::Set>(&s.node)) out.insert(x->node->id);
    if (const auto* x = std::get_if<ir::SetDynamic>(&s.node)) out.insert(x->node->id);
    if (const auto* x = std::get_if<ir::ZeroOut>(&s.node)) out.insert(x->node->id);
  });
  return out;
}

bool local_needs_init(const ir::StmtRef& body, int scope_id) {
  return first_access(body, scope_id) != FirstAccess::Set;
}

}  // namespace cannl::opt
