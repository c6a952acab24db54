// TreeMapper and the read-only walks (see tree_mapper.h).
#include "cannl/ir/tree_mapper.h"

namespace cannl::ir {

namespace {

template <class T>
std::shared_ptr<const T> keep_or(const std::shared_ptr<const T>& old, bool changed, auto&& make) {
  return changed ? make() : old;
}

}  // namespace

ir::ScalarRef TreeMapper::map_children(const ir::ScalarRef& s) {
  if (!s) return s;
  if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) {
    const ir::StmtRef body = map_stmt(l->body);
    return keep_or(s, body != l->body, [&] { return ir::local_scope(l->scope_id, l->dtype, body); });
  }
  if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
    std::vector<ir::ScalarRef> args;
    bool changed = false;
    for (const auto& x : a->args) {
      args.push_back(map_scalar(x));
      changed = changed || args.back() != x;
    }
    return keep_or(s, changed, [&] { return ir::apply(a->op, a->dtype, args); });
  }
  if (const auto* g = std::get_if<ir::GetDynamic>(&s->node)) {
    const ir::ScalarRef row = map_scalar(g->dyn_value);
    return keep_or(s, row != g->dyn_value, [&] { return ir::get_dynamic(g->node, g->index, g->dyn_axis, row); });
  }
  return s;
}

namespace {

struct StmtChildren {
  TreeMapper& m;  // map_stmt/map_scalar are public
  const ir::StmtRef& s;
  ir::StmtRef operator()(const ir::Seq& q) const {
    std::vector<ir::StmtRef> out;
    bool changed = false;
    for (const auto& x : q.stmts) {
      out.push_back(m.map_stmt(x));
      changed = changed || out.back() != x;
    }
    return keep_or(s, changed, [&] { return ir::seq(out); });
  }
  ir::StmtRef operator()(const ir::For& f) const {
    const ir::StmtRef body = m.map_stmt(f.body);
    return keep_or(s, body != f.body, [&] {
      ir::For g = f;  // keeps the axis type and the target's facts (chunks, team)
      g.body = body;
      return std::make_shared<const ir::Stmt>(ir::Stmt{std::move(g)});
    });
  }
  ir::StmtRef operator()(const ir::Set& x) const {
    const ir::ScalarRef v = m.map_scalar(x.value);
    return keep_or(s, v != x.value, [&] { return ir::set(x.node, x.index, v, x.comment); });
  }
  ir::StmtRef operator()(const ir::SetLocal& x) const {
    const ir::ScalarRef v = m.map_scalar(x.value);
    return keep_or(s, v != x.value, [&] { return ir::set_local(x.scope_id, v); });
  }
  ir::StmtRef operator()(const ir::If& x) const {
    const ir::ScalarRef c = m.map_scalar(x.condition);
    const ir::StmtRef body = m.map_stmt(x.body);
    return keep_or(s, c != x.condition || body != x.body, [&] { return ir::if_then(c, body); });
  }
  ir::StmtRef operator()(const ir::SetDynamic& x) const {
    const ir::ScalarRef row = m.map_scalar(x.dyn_value);
    const ir::ScalarRef v = m.map_scalar(x.value);
    return keep_or(s, row != x.dyn_value || v != x.value, [&] {
      return ir::set_dynamic(x.node, x.index, x.dyn_axis, row, v, x.accum, x.comment);
    });
  }
  // A pass that changes the fallback may invalidate the descriptor: the rewritten fallback
  // (which is the meaning) replaces the TileMma.
  ir::StmtRef operator()(const ir::TileMma& x) const {
    const ir::StmtRef fallback = m.map_stmt(x.fallback);
    if (fallback == x.fallback) return s;
    return x.zero_start ? ir::seq({ir::zero_out(x.d.node), fallback}) : fallback;
  }
  ir::StmtRef operator()(const auto&) const { return s; }  // Comment, ZeroOut, DeclareLocal, Barrier
};

}  // namespace

ir::StmtRef TreeMapper::map_children(const ir::StmtRef& s) {
  if (!s) return s;
  return std::visit(StmtChildren{*this, s}, s->node);
}

namespace {

// A mapper used only to visit: it records and never changes anything.
struct Visiting : TreeMapper {
  std::function<void(const ir::Scalar&)> on_scalar;
  std::function<void(const ir::Stmt&)> on_stmt;
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    if (s && on_scalar) on_scalar(*s);
    return map_children(s);
  }
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (s && on_stmt) on_stmt(*s);
    return map_children(s);
  }
};

}  // namespace

void for_each_scalar(const ir::StmtRef& stmt, const std::function<void(const ir::Scalar&)>& fn) {
  Visiting v;
  v.on_scalar = fn;
  v.map_stmt(stmt);
}

void for_each_scalar(const ir::ScalarRef& scalar, const std::function<void(const ir::Scalar&)>& fn) {
  Visiting v;
  v.on_scalar = fn;
  v.map_scalar(scalar);
}

void for_each_stmt(const ir::StmtRef& stmt, const std::function<void(const ir::Stmt&)>& fn) {
  Visiting v;
  v.on_stmt = fn;
  v.map_stmt(stmt);
}

int count_local_reads(const ir::ScalarRef& scalar, int scope_id) {
  int n = 0;
  for_each_scalar(scalar, [&](const ir::Scalar& s) {
    if (const auto* g = std::get_if<ir::GetLocal>(&s.node); g && g->scope_id == scope_id) ++n;
  });
  return n;
}

}  // namespace cannl::ir
