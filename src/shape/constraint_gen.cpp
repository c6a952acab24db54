// Constraint generation per operation (semantics-frontend.md 3.3): pointwise and compose use
// broadcasting inequalities, einsum specs use equations against per-operation templates (2.3).

#include <map>

#include "cannl/support/error.h"
#include "shape/constraint_gen.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

constexpr RowKind kKinds[] = {RowKind::Batch, RowKind::Input, RowKind::Output};

void mark_used_in_spec(const Row& r0) {
  const Row r = subst(r0);
  if (r.is_open() && !row_info(r.var).used_in_spec) update_row_info(r.var).used_in_spec = true;
}

void require_operands(const UpdateStep& step, std::size_t lo, std::size_t hi, const char* what) {
  const auto n = step.operands.size();
  if (n < lo || n > hi)
    throw ShapeError(std::string(what) + " in operation '" + step.op_name + "' expects " +
                     std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : "") +
                     " operand(s), got " + std::to_string(n));
}

struct Gen {
  const OriginRef& origin;
  std::vector<Constraint> out;

  void ineq(const Row& res, const Row& opnd) { out.push_back(make_row(ConstraintKind::RowIneq, res, opnd, origin)); }
  void eq(const Row& a, const Row& b) { out.push_back(make_row(ConstraintKind::RowEq, a, b, origin)); }
};

void gen_terminal(const Terminal& t, Shape& c, Gen& g) {
  c.is_terminal = true;
  if (t.is_scalar_constant) {
    g.eq(c.batch, Row::closed({}));
    g.eq(c.input, Row::closed({}));
    g.eq(c.output, Row::closed({Dim::bcast_one()}));
  }
  if (t.is_param) {
    c.is_param = true;
    const Row b = subst(c.batch);
    if (b.is_open() && b.num_explicit() == 0) g.eq(c.batch, Row::closed({}));  // params: no batch
  }
  Constraint marker;
  marker.kind = ConstraintKind::Terminal;
  marker.rows = {c.batch, c.input, c.output};
  marker.is_param = t.is_param;
  marker.param_name = c.name;
  marker.origin = g.origin;
  g.out.push_back(marker);
  if (t.total_elems) {
    Constraint total;
    total.kind = ConstraintKind::TotalElems;
    total.rows = {c.batch, c.output, c.input};
    total.n = *t.total_elems;
    total.origin = g.origin;
    g.out.push_back(total);
  }
}

void gen_compose(const UpdateStep& st, Gen& g) {
  require_operands(st, 2, 3, "Compose");
  const Shape &c = *st.result, &a = *st.operands[0], &b = *st.operands[1];
  g.ineq(a.input, b.output);
  g.ineq(c.batch, a.batch);
  g.ineq(c.batch, b.batch);
  g.ineq(c.input, b.input);
  g.ineq(c.output, a.output);
  if (st.operands.size() == 3)
    for (RowKind k : kKinds) g.ineq(c.row(k), st.operands[2]->row(k));
  for (const Shape* s : {&a, &b})
    for (RowKind k : kKinds)
      if (k != RowKind::Batch) mark_used_in_spec(s->row(k));
}

/// Per-operation environments label -> dim variable and row variable name -> row variable.
struct EinsumEnv {
  std::map<std::string, int> labels;
  std::map<std::string, int> named_rows;
  std::map<int, int> context_rows;  // by RowKind
  std::map<std::string, int> label_uses;  // occurrences in the whole spec (discardable parts)
  int step_id = -1;
};

Dim label_dim(const std::string& label, EinsumEnv& env) {
  auto [it, fresh] = env.labels.emplace(label, 0);
  if (fresh) it->second = fresh_var();
  return Dim::variable(it->second);
}

Dim affine_dim(const AxisSpec& a, EinsumEnv& env, Gen& g) {
  Constraint k = make_dim(ConstraintKind::Affine, Dim::variable(fresh_var()), label_dim(a.label, env),
                          g.origin);
  k.has_kernel = !a.kernel.empty();
  if (k.has_kernel) k.d3 = label_dim(a.kernel, env);
  k.stride = a.stride;
  k.dilation = a.dilation;
  k.use_padding = a.use_padding;
  k.d1.label_step = k.d2.label_step = env.step_id;
  k.d1.label_pos = k.d2.label_pos = a.pos;
  g.out.push_back(k);
  return k.d1;
}

Dim concat_dim(const AxisSpec& a, EinsumEnv& env, Gen& g) {
  Constraint k = make_dim(ConstraintKind::Concat, Dim::variable(fresh_var()), {}, g.origin);
  k.d1.label_step = env.step_id;
  k.d1.label_pos = a.pos;
  for (const auto& p : a.parts) {
    k.parts.push_back(p.label.empty() ? Dim::solved(p.size) : label_dim(p.label, env));
    k.discardable.push_back(!p.label.empty() && env.label_uses[p.label] == 1);
  }
  g.out.push_back(k);
  return k.d1;
}

void count_labels(const SlotSpec& slot, EinsumEnv& env) {
  for (const auto* r : {&slot.batch, &slot.input, &slot.output})
    for (const auto* axes : {&r->beg, &r->dims})
      for (const auto& a : *axes) {
        if (a.kind == AxisSpec::Kind::Label || a.kind == AxisSpec::Kind::Affine) ++env.label_uses[a.label];
        if (!a.kernel.empty()) ++env.label_uses[a.kernel];
        for (const auto& p : a.parts)
          if (!p.label.empty()) ++env.label_uses[p.label];
      }
}

Dim axis_dim(const AxisSpec& a, EinsumEnv& env, Gen& g) {
  Dim d;
  if (a.kind == AxisSpec::Kind::Fixed) {
    d = Dim::variable(fresh_var());
    Constraint k = make_dim(ConstraintKind::AtLeast, d, d, g.origin);
    k.n = a.index + 1;
    k.d1.label_step = env.step_id;
    k.d1.label_pos = a.pos;
    g.out.push_back(k);
  } else if (a.kind == AxisSpec::Kind::Affine) {
    d = affine_dim(a, env, g);
  } else if (a.kind == AxisSpec::Kind::Concat) {
    d = concat_dim(a, env, g);
  } else {
    d = label_dim(a.label, env);
  }
  d.label_step = env.step_id;
  d.label_pos = a.pos;
  return d;
}

Row template_row(const RowSpec& spec, RowKind kind, EinsumEnv& env, Gen& g) {
  Row r;
  for (const auto& a : spec.beg) r.beg.push_back(axis_dim(a, env, g));
  for (const auto& a : spec.dims) r.dims.push_back(axis_dim(a, env, g));
  if (!spec.has_ellipsis) return Row::closed(r.dims);
  int& var = spec.is_context ? env.context_rows.try_emplace(static_cast<int>(kind), -1).first->second
                             : env.named_rows.try_emplace(spec.var_name, -1).first->second;
  if (var < 0) var = fresh_var();
  r.var = var;
  return r;
}

/// Binds the captures of the spec to its variables (semantics 2.12).
void resolve_captures(StepRecord& rec, const Einsum& e, const EinsumEnv& env) {
  for (const auto& ref : e.captures) {
    internal_check(ref != nullptr, "null capture in an einsum step");
    if (ref->var >= 0)
      throw ShapeError("capture '" + ref->label + "' is already bound to spec: " + ref->spec +
                       "; create one capture per spec");
    if (auto it = env.labels.find(ref->label); it != env.labels.end())
      rec.captures.push_back({ref, it->second, false});
    else if (auto r = env.named_rows.find(ref->label); r != env.named_rows.end())
      rec.captures.push_back({ref, r->second, true});
    else
      throw ShapeError("Variable '" + ref->label + "' not found in environments for spec: " + e.spec +
                       " (capture a label or the name of a ..row.. variable of the spec)");
  }
}

void gen_einsum(StepRecord& rec, Gen& g) {
  const UpdateStep& st = rec.step;
  rec.spec = parse_einsum(std::get<Einsum>(st.logic).spec);
  const EinsumSpec& spec = *rec.spec;
  if (spec.rhs.size() != st.operands.size())
    throw EinsumSyntaxError("Invalid einsum spec: expected " + std::to_string(spec.rhs.size()) + " operand" +
                            (spec.rhs.size() == 1 ? "" : "s") + " for spec '" + spec.text +
                            "' in operation '" + st.op_name + "', got " +
                            std::to_string(st.operands.size()));
  EinsumEnv env;
  env.step_id = g.origin->step_id;
  count_labels(spec.lhs, env);
  for (const auto& slot : spec.rhs) count_labels(slot, env);
  auto slot_rows = [&](const SlotSpec& slot, const Shape& shape, bool operand) {
    const RowSpec* rows[] = {&slot.batch, &slot.input, &slot.output};
    for (int i = 0; i < 3; ++i) {
      g.eq(template_row(*rows[i], kKinds[i], env, g), shape.row(kKinds[i]));
      if (operand) mark_used_in_spec(shape.row(kKinds[i]));
    }
  };
  slot_rows(spec.lhs, *st.result, false);
  for (std::size_t i = 0; i < spec.rhs.size(); ++i) slot_rows(spec.rhs[i], *st.operands[i], true);
  rec.label_vars = env.labels;
  resolve_captures(rec, std::get<Einsum>(st.logic), env);
}

void gen_batch_slice(const BatchSlice& slice, const UpdateStep& st, Gen& g) {
  require_operands(st, 1, 1, "BatchSlice");
  const Shape &c = *st.result, &a = *st.operands[0];
  const Dim s = slice.index.range > 0 ? Dim::solved(slice.index.range) : Dim::variable(fresh_var());
  Row sliced = subst(c.batch);
  (sliced.is_open() ? sliced.beg : sliced.dims).insert(
      (sliced.is_open() ? sliced.beg : sliced.dims).begin(), s);
  g.eq(a.batch, sliced);
  g.eq(c.input, a.input);
  g.eq(c.output, a.output);
}

}  // namespace

std::vector<Constraint> generate_constraints(StepRecord& rec, const OriginRef& origin) {
  const UpdateStep& st = rec.step;
  internal_check(st.result != nullptr, "update step without a result shape");
  for (const auto& o : st.operands) internal_check(o != nullptr, "update step with a null operand");
  Gen g{origin, {}};
  Shape& c = *st.result;
  if (const auto* t = std::get_if<Terminal>(&st.logic)) {
    gen_terminal(*t, c, g);
  } else if (std::holds_alternative<Pointwise>(st.logic)) {
    for (const auto& a : st.operands)
      for (RowKind k : kKinds) g.ineq(c.row(k), a->row(k));
  } else if (std::holds_alternative<Compose>(st.logic)) {
    gen_compose(st, g);
  } else if (std::holds_alternative<Transpose>(st.logic)) {
    require_operands(st, 1, 1, "Transpose");
    const Shape& a = *st.operands[0];
    g.ineq(c.batch, a.batch);
    g.ineq(c.input, a.output);
    g.ineq(c.output, a.input);
  } else if (std::holds_alternative<Einsum>(st.logic)) {
    gen_einsum(rec, g);
  } else {
    gen_batch_slice(std::get<BatchSlice>(st.logic), st, g);
  }
  return std::move(g.out);
}

}  // namespace cannl::shape
