// Loop-tree helpers of the schedule transforms (see loop_tree.h).
#include "schedule/loop_tree.h"

#include <set>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::schedule::detail {

namespace {

// Walks statements and the statement bodies of scalars (local scopes), tracking the loops around.
// With no target it records every loop's site, in the order for_each_stmt visits the loops.
class LoopFinder {
 public:
  explicit LoopFinder(std::optional<ir::Symbol> target) : target_(target) {}
  std::optional<LoopSite> found;
  std::vector<LoopSite> all;

  void stmt(const ir::StmtRef& s) {
    if (!s || found) return;
    if (const auto* f = std::get_if<ir::For>(&s->node)) {
      if (!target_) {
        all.push_back(site_);
        all.back().loop = f;
        all.back().stmt = s;
      } else if (f->index == *target_) {
        found = site_;
        found->loop = f;
        found->stmt = s;
        return;
      }
      site_.enclosing.push_back(f);
      stmt(f->body);
      site_.enclosing.pop_back();
    } else if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts) stmt(x);
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      scalar(i->condition);
      with_flag(site_.under_if, [&] { stmt(i->body); });
    } else if (const auto* t = std::get_if<ir::TileMma>(&s->node)) {
      with_flag(site_.in_tile, [&] { stmt(t->fallback); });
    } else if (const auto* x = std::get_if<ir::Set>(&s->node)) {
      scalar(x->value);
    } else if (const auto* l = std::get_if<ir::SetLocal>(&s->node)) {
      scalar(l->value);
    } else if (const auto* d = std::get_if<ir::SetDynamic>(&s->node)) {
      scalar(d->dyn_value);
      scalar(d->value);
    }
  }

 private:
  std::optional<ir::Symbol> target_;
  LoopSite site_;

  template <class F>
  void with_flag(bool& flag, F&& body) {
    const bool saved = flag;
    flag = true;
    body();
    flag = saved;
  }
  void scalar(const ir::ScalarRef& s) {
    ir::for_each_scalar(s, [&](const ir::Scalar& x) {
      if (const auto* l = std::get_if<ir::LocalScope>(&x.node))
        with_flag(site_.in_local_scope, [&] { stmt(l->body); });
    });
  }
};

class LoopReplacer : public ir::TreeMapper {
 public:
  LoopReplacer(ir::Symbol s, const std::function<ir::StmtRef(const ir::For&)>& rewrite)
      : target_(s), rewrite_(rewrite) {}
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* f = std::get_if<ir::For>(&s->node); f && f->index == target_) return rewrite_(*f);
    return map_children(s);
  }

 private:
  ir::Symbol target_;
  const std::function<ir::StmtRef(const ir::For&)>& rewrite_;
};

class SymbolSubstituter : public ir::TreeMapper {
 public:
  SymbolSubstituter(ir::Symbol s, const ir::AxisIndex& value) { values_[s] = value; }

  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    if (const auto* g = std::get_if<ir::Get>(&s->node)) return ir::get(g->node, index(g->index));
    if (const auto* e = std::get_if<ir::EmbedIndex>(&s->node))
      return ir::embed_index(ir::substitute(e->index, values_));
    if (const auto* d = std::get_if<ir::GetDynamic>(&s->node))
      return ir::get_dynamic(d->node, index(d->index), d->dyn_axis, map_scalar(d->dyn_value));
    return map_children(s);
  }
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* x = std::get_if<ir::Set>(&s->node))
      return ir::set(x->node, index(x->index), map_scalar(x->value), x->comment);
    if (const auto* d = std::get_if<ir::SetDynamic>(&s->node))
      return ir::set_dynamic(d->node, index(d->index), d->dyn_axis, map_scalar(d->dyn_value),
                             map_scalar(d->value), d->accum, d->comment);
    if (const auto* t = std::get_if<ir::TileMma>(&s->node)) {
      ir::TileMma out = *t;
      for (ir::TileOperand* o : {&out.d, &out.a, &out.b}) o->index = index(o->index);
      out.fallback = map_stmt(t->fallback);
      return ir::tile_mma(std::move(out));
    }
    return map_children(s);
  }

 private:
  std::map<ir::Symbol, ir::AxisIndex> values_;
  std::vector<ir::AxisIndex> index(const std::vector<ir::AxisIndex>& idx) const {
    std::vector<ir::AxisIndex> out;
    for (const auto& i : idx) out.push_back(ir::substitute(i, values_));
    return out;
  }
};

// Mirrors the printer's naming order (src/ir/printer.cpp): loops are named when first bound, a
// TileMma names its i, j, k before printing its fallback, scalars are walked in print order.
class CanonicalOrder {
 public:
  std::vector<ir::Symbol> order;

  void stmt(const ir::StmtRef& s) {
    if (!s) return;
    std::visit([this](const auto& n) { visit(n); }, s->node);
  }

 private:
  std::set<ir::Symbol> seen_;
  void bind(ir::Symbol s) {
    if (seen_.insert(s).second) order.push_back(s);
  }
  void scalar(const ir::ScalarRef& s) {
    if (!s) return;
    if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) stmt(l->body);
    if (const auto* a = std::get_if<ir::Apply>(&s->node))
      for (const auto& x : a->args) scalar(x);
    if (const auto* g = std::get_if<ir::GetDynamic>(&s->node)) scalar(g->dyn_value);
  }
  void visit(const ir::Seq& q) { for (const auto& x : q.stmts) stmt(x); }
  void visit(const ir::For& f) { bind(f.index); stmt(f.body); }
  void visit(const ir::Set& x) { scalar(x.value); }
  void visit(const ir::SetLocal& x) { scalar(x.value); }
  void visit(const ir::If& x) { scalar(x.condition); stmt(x.body); }
  void visit(const ir::SetDynamic& x) { scalar(x.dyn_value); scalar(x.value); }
  void visit(const ir::TileMma& t) {
    for (const ir::TileAxis* a : t.axes()) bind(a->symbol);
    stmt(t.fallback);
  }
  void visit(const auto&) {}  // Comment, ZeroOut, DeclareLocal, Barrier
};

}  // namespace

std::optional<LoopSite> find_loop(const ir::StmtRef& root, ir::Symbol s) {
  LoopFinder f(s);
  f.stmt(root);
  return f.found;
}

std::vector<LoopSite> loop_sites(const ir::StmtRef& root) {
  LoopFinder f(std::nullopt);
  f.stmt(root);
  return std::move(f.all);
}

ir::StmtRef replace_loop(const ir::StmtRef& root, ir::Symbol s,
                         const std::function<ir::StmtRef(const ir::For&)>& rewrite) {
  return LoopReplacer(s, rewrite).map_stmt(root);
}

ir::StmtRef substitute_symbol(const ir::StmtRef& stmt, ir::Symbol s, const ir::AxisIndex& value) {
  return SymbolSubstituter(s, value).map_stmt(stmt);
}

std::vector<ir::Symbol> canonical_loops(const ir::StmtRef& root) {
  CanonicalOrder c;
  c.stmt(root);
  return c.order;
}

std::string loop_name(const ir::StmtRef& root, ir::Symbol s) {
  const auto order = canonical_loops(root);
  for (std::size_t k = 0; k < order.size(); ++k)
    if (order[k] == s) return "i" + std::to_string(k);
  return "?";
}

std::optional<ir::Symbol> loop_named(const ir::StmtRef& root, const std::string& name) {
  if (name.size() < 2 || name[0] != 'i') return std::nullopt;
  std::size_t k = 0;
  for (std::size_t p = 1; p < name.size(); ++p) {
    if (name[p] < '0' || name[p] > '9') return std::nullopt;
    k = k * 10 + static_cast<std::size_t>(name[p] - '0');
  }
  const auto order = canonical_loops(root);
  if (k >= order.size()) return std::nullopt;
  return order[k];
}

std::vector<const ir::For*> perfect_nest(const ir::For& top, ir::StmtRef& leaf) {
  std::vector<const ir::For*> loops{&top};
  while (true) {
    const auto body = flatten_seq(loops.back()->body);
    if (body.size() != 1) return loops;
    leaf = body[0];
    const auto* inner = std::get_if<ir::For>(&body[0]->node);
    if (!inner) return loops;
    loops.push_back(inner);
  }
}

std::optional<StoreNest> serial_store_nest(const ir::For& top, std::size_t min_loops) {
  ir::StmtRef leaf;
  StoreNest nest{perfect_nest(top, leaf), nullptr};
  nest.store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  if (nest.loops.size() < min_loops || !nest.store) return std::nullopt;
  for (const ir::For* f : nest.loops)
    if (f->axis != ir::AxisType::Serial) return std::nullopt;
  return nest;
}

}  // namespace cannl::schedule::detail
