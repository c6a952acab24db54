// The simplifier's traversal (see simplify.h); the rules are data in simplify_rules.cpp and
// simplify_algebra_rules.cpp.
#include "simplify.h"

#include "cannl/interp/scalar_semantics.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::opt {

namespace {

constexpr int kMaxRewriteDepth = 64;  // a guard against a rule cycle, never reached by the tables

// Replaces reads of one local by a value (already converted to the local's dtype).
struct SubstituteLocal : ir::TreeMapper {
  int scope_id;
  ir::DType dtype;
  ir::ScalarRef value;
  bool failed = false;
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    const auto* g = std::get_if<ir::GetLocal>(&s->node);
    if (!g || g->scope_id != scope_id) return map_children(s);
    ir::ScalarRef v = g->dtype == dtype ? value : store_cast(value, g->dtype);
    if (!v) failed = true;
    return v ? v : s;
  }
};

bool cheap(const ir::ScalarRef& x) {
  return constant_of(x) || std::holds_alternative<ir::Get>(x->node) ||
         std::holds_alternative<ir::GetLocal>(x->node) || std::holds_alternative<ir::EmbedIndex>(x->node);
}

class Simplifier : public ir::TreeMapper {
 public:
  Simplifier(SymbolRanges ranges, const SimplifyOptions& options)
      : ranges_(std::move(ranges)), options_(options) {}

  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    if (const auto* e = std::get_if<ir::EmbedIndex>(&s->node); e && e->index.is_fixed())
      return ir::constant_bits(e->index.offset, ir::DType::I64);
    const ir::ScalarRef t = map_children(s);
    if (const auto* l = std::get_if<ir::LocalScope>(&t->node)) return collapse_scope(t, *l);
    if (const auto* a = std::get_if<ir::Apply>(&t->node)) return rewrite(t, *a);
    return t;
  }

  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* f = std::get_if<ir::For>(&s->node)) return loop(s, *f);
    const ir::StmtRef t = map_children(s);
    if (const auto* q = std::get_if<ir::Seq>(&t->node)) return flatten(t, *q);
    if (const auto* i = std::get_if<ir::If>(&t->node)) {
      if (const auto c = constant_of(i->condition); c && c->dtype != ir::DType::U4x32)
        return interp::is_nonzero(*c) ? i->body : ir::seq({});
      if (is_empty(i->body)) return ir::seq({});
    }
    return t;
  }

 private:
  SymbolRanges ranges_;
  const SimplifyOptions& options_;
  int depth_ = 0;

  static bool is_empty(const ir::StmtRef& s) {
    const auto* q = std::get_if<ir::Seq>(&s->node);
    return q && q->stmts.empty();
  }

  ir::StmtRef loop(const ir::StmtRef& s, const ir::For& f) {
    if (f.end <= f.begin) return ir::seq({});
    ranges_.bind(f.index, f.begin, f.end - 1);
    const ir::StmtRef body = map_stmt(f.body);
    ranges_.unbind(f.index);
    if (is_empty(body)) return ir::seq({});
    return body == f.body ? s : ir::for_loop(f.index, f.begin, f.end, body, f.axis);
  }

  // Nested sequences splice into their parent; empty statements disappear.
  static ir::StmtRef flatten(const ir::StmtRef& s, const ir::Seq& q) {
    bool nested = false;
    for (const auto& x : q.stmts) nested = nested || std::holds_alternative<ir::Seq>(x->node);
    if (!nested) return s;
    std::vector<ir::StmtRef> out;
    for (const auto& x : q.stmts) {
      if (const auto* inner = std::get_if<ir::Seq>(&x->node))
        out.insert(out.end(), inner->stmts.begin(), inner->stmts.end());
      else
        out.push_back(x);
    }
    return out.size() == 1 ? out[0] : ir::seq(out);
  }

  ir::ScalarRef rewrite(const ir::ScalarRef& s, const ir::Apply& a) {
    if (depth_ >= kMaxRewriteDepth) return s;
    const RuleEnv env{ranges_, options_};
    for (const RewriteRule& rule : simplify_rules()) {
      const ir::ScalarRef r = rule.rewrite(a, env);
      if (!r) continue;
      ++depth_;
      const ir::ScalarRef out = map_scalar(r);
      --depth_;
      return out;
    }
    return s;
  }

  // The statements of a scope's body, with its leading SetLocals merged: a scope's local starts
  // at zero, so `v := 0; v := v + x` becomes `v := 0 + x` (then `x` by the rules).
  std::vector<ir::StmtRef> merged_body(const ir::LocalScope& l) {
    std::vector<ir::StmtRef> stmts;
    if (const auto* q = std::get_if<ir::Seq>(&l.body->node)) stmts = q->stmts;
    else stmts = {l.body};
    ir::ScalarRef current = scalar_of(interp::convert(interp::Value::of(0.0), l.dtype));
    std::size_t k = 0;
    for (; k < stmts.size(); ++k) {
      const auto* set = std::get_if<ir::SetLocal>(&stmts[k]->node);
      if (!set || set->scope_id != l.scope_id) break;
      if (ir::count_local_reads(set->value, l.scope_id) > 1 && !cheap(current)) break;
      SubstituteLocal sub;
      sub.scope_id = l.scope_id;
      sub.dtype = l.dtype;
      sub.value = current;
      const ir::ScalarRef value = sub.map_scalar(set->value);
      const ir::ScalarRef stored = sub.failed ? nullptr : store_cast(value, l.dtype);
      if (!stored) break;
      current = map_scalar(stored);
    }
    if (k == 0) return stmts;
    std::vector<ir::StmtRef> out{ir::set_local(l.scope_id, current)};
    out.insert(out.end(), stmts.begin() + static_cast<std::ptrdiff_t>(k), stmts.end());
    return out;
  }

  ir::ScalarRef collapse_scope(const ir::ScalarRef& s, const ir::LocalScope& l) {
    const std::vector<ir::StmtRef> body = merged_body(l);
    if (body.size() == 1) {
      const auto* set = std::get_if<ir::SetLocal>(&body[0]->node);
      if (set && set->scope_id == l.scope_id && ir::count_local_reads(set->value, l.scope_id) == 0 &&
          ir::scalar_dtype(*set->value) == l.dtype)
        return set->value;  // merged_body stored it in the local's dtype already
    }
    if (body.size() == 1 && std::holds_alternative<ir::Seq>(l.body->node) == false && body[0] == l.body)
      return s;
    return ir::local_scope(l.scope_id, l.dtype, body.size() == 1 ? body[0] : ir::seq(body));
  }
};

}  // namespace

ir::LoweredRoutine simplify_with(const ir::LoweredRoutine& routine, const PassContext&,
                                 const SimplifyOptions& options) {
  Simplifier s(SymbolRanges::of_statics(routine.statics), options);
  ir::LoweredRoutine out = routine;
  if (routine.body) out.body = s.map_stmt(routine.body);
  return out;
}

ir::LoweredRoutine simplify(const ir::LoweredRoutine& routine, const PassContext& ctx) {
  return simplify_with(routine, ctx, SimplifyOptions{.fuse_multiply_add = ctx.fuse_multiply_add});
}

ir::ScalarRef simplify_scalar(const ir::ScalarRef& scalar, const SymbolRanges& ranges,
                              const SimplifyOptions& options) {
  return Simplifier(ranges, options).map_scalar(scalar);
}

}  // namespace cannl::opt
