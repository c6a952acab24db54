// Alpha-equivalence with binder-site renaming kept bijective (see alpha_equivalence.h).
#include "alpha_equivalence.h"

#include <cstring>
#include <map>

namespace cannl::opt {

namespace {

// A partial bijection between the names of the left and the right tree.
class Renaming {
 public:
  // At a binder: a and b become each other's images, unless either is already claimed.
  bool bind(int a, int b) {
    const auto f = forward_.find(a);
    const auto r = reverse_.find(b);
    if (f != forward_.end() || r != reverse_.end())
      return f != forward_.end() && r != reverse_.end() && f->second == b && r->second == a;
    forward_[a] = b;
    reverse_[b] = a;
    return true;
  }
  // At a use: a bound name matches its image only; a free name matches itself, and only when the
  // right tree does not use that name for one of its own binders.
  bool same(int a, int b) const {
    const auto f = forward_.find(a);
    if (f != forward_.end()) return f->second == b;
    return a == b && reverse_.count(b) == 0;
  }

 private:
  std::map<int, int> forward_;
  std::map<int, int> reverse_;
};

class Comparator {
 public:
  bool scalar(const ir::ScalarRef& a, const ir::ScalarRef& b) {
    if (!a || !b) return a == b;
    if (a->node.index() != b->node.index()) return false;
    return std::visit([&](const auto& x) { return same(x, std::get<std::decay_t<decltype(x)>>(b->node)); }, a->node);
  }
  bool stmt(const ir::StmtRef& a, const ir::StmtRef& b) {
    if (!a || !b) return a == b;
    if (a->node.index() != b->node.index()) return false;
    return std::visit([&](const auto& x) { return same(x, std::get<std::decay_t<decltype(x)>>(b->node)); }, a->node);
  }

 private:
  Renaming symbols_;
  Renaming scopes_;

  bool index(const ir::AxisIndex& a, const ir::AxisIndex& b) const {
    if (a.offset != b.offset || a.terms.size() != b.terms.size()) return false;
    for (std::size_t k = 0; k < a.terms.size(); ++k) {
      if (a.terms[k].coeff != b.terms[k].coeff) return false;
      if (!symbols_.same(a.terms[k].symbol.id, b.terms[k].symbol.id)) return false;
    }
    return true;
  }
  bool access(const ir::NodeRef& na, const std::vector<ir::AxisIndex>& a, const ir::NodeRef& nb,
              const std::vector<ir::AxisIndex>& b) const {
    if (na != nb || a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (!index(a[k], b[k])) return false;
    return true;
  }

  // ---- scalars ----
  bool same(const ir::Constant& a, const ir::Constant& b) {
    return a.dtype == b.dtype && std::memcmp(&a.value, &b.value, sizeof(double)) == 0;
  }
  bool same(const ir::ConstantBits& a, const ir::ConstantBits& b) { return a.dtype == b.dtype && a.bits == b.bits; }
  bool same(const ir::Get& a, const ir::Get& b) { return access(a.node, a.index, b.node, b.index); }
  bool same(const ir::GetDynamic& a, const ir::GetDynamic& b) {
    return a.dyn_axis == b.dyn_axis && access(a.node, a.index, b.node, b.index) &&
           scalar(a.dyn_value, b.dyn_value);
  }
  bool same(const ir::LocalScope& a, const ir::LocalScope& b) {
    return a.dtype == b.dtype && scopes_.bind(a.scope_id, b.scope_id) && stmt(a.body, b.body);
  }
  bool same(const ir::GetLocal& a, const ir::GetLocal& b) {
    return a.dtype == b.dtype && scopes_.same(a.scope_id, b.scope_id);
  }
  bool same(const ir::EmbedIndex& a, const ir::EmbedIndex& b) { return index(a.index, b.index); }
  bool same(const ir::Apply& a, const ir::Apply& b) {
    if (a.op != b.op || a.dtype != b.dtype || a.args.size() != b.args.size()) return false;
    for (std::size_t k = 0; k < a.args.size(); ++k)
      if (!scalar(a.args[k], b.args[k])) return false;
    return true;
  }

  // ---- statements ----
  bool same(const ir::Seq& a, const ir::Seq& b) {
    if (a.stmts.size() != b.stmts.size()) return false;
    for (std::size_t k = 0; k < a.stmts.size(); ++k)
      if (!stmt(a.stmts[k], b.stmts[k])) return false;
    return true;
  }
  bool same(const ir::Comment&, const ir::Comment&) { return true; }
  bool same(const ir::For& a, const ir::For& b) {
    return a.begin == b.begin && a.end == b.end && a.axis == b.axis &&
           symbols_.bind(a.index.id, b.index.id) &&
           stmt(a.body, b.body);
  }
  bool same(const ir::ZeroOut& a, const ir::ZeroOut& b) { return a.node == b.node; }
  bool same(const ir::Set& a, const ir::Set& b) {
    return access(a.node, a.index, b.node, b.index) && scalar(a.value, b.value);
  }
  bool same(const ir::SetLocal& a, const ir::SetLocal& b) {
    return scopes_.same(a.scope_id, b.scope_id) && scalar(a.value, b.value);
  }
  bool same(const ir::DeclareLocal& a, const ir::DeclareLocal& b) {
    return a.dtype == b.dtype && a.needs_init == b.needs_init && scopes_.bind(a.scope_id, b.scope_id);
  }
  bool same(const ir::If& a, const ir::If& b) { return scalar(a.condition, b.condition) && stmt(a.body, b.body); }
  bool same(const ir::SetDynamic& a, const ir::SetDynamic& b) {
    return a.dyn_axis == b.dyn_axis && a.accum == b.accum &&
           access(a.node, a.index, b.node, b.index) && scalar(a.dyn_value, b.dyn_value) &&
           scalar(a.value, b.value);
  }
  bool same(const ir::Barrier&, const ir::Barrier&) { return true; }
  // The descriptor is derived from the fallback (and how many of its loops it folds), so equal
  // fallbacks folded alike mean equal tiles.
  bool same(const ir::TileMma& a, const ir::TileMma& b) {
    return a.fused == b.fused && a.outer_i.size() == b.outer_i.size() &&
           a.outer_j.size() == b.outer_j.size() && a.outer_k.size() == b.outer_k.size() &&
           stmt(a.fallback, b.fallback);
  }
};

}  // namespace

bool alpha_equivalent(const ir::ScalarRef& a, const ir::ScalarRef& b) { return Comparator().scalar(a, b); }
bool alpha_equivalent(const ir::StmtRef& a, const ir::StmtRef& b) { return Comparator().stmt(a, b); }

}  // namespace cannl::opt
