// Capture of solved dimensions (semantics-frontend.md 2.12): a VariableRef names a label or a
// row variable of an einsum spec; once the step is propagated it points at the spec's variable,
// reads the size inference found for it and can fix it (`set_dim`).

#include "cannl/shape/shape.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

/// The size of the variable as far as the current solution knows it.
std::optional<std::int64_t> current_value(const CapturedVariable& ref) {
  if (!ref.is_row) {
    const Dim d = subst(Dim::variable(ref.var));
    if (d.is_var()) return std::nullopt;
    return d.size;
  }
  const Row r = subst(Row::open(ref.var));
  if (r.is_open()) return std::nullopt;
  std::int64_t total = 1;
  for (const auto& d : r.dims) {
    if (d.is_var()) return std::nullopt;
    const auto product = checked_mul(total, d.size);
    if (!product)
      throw ShapeError("capture '" + ref.label + "': the product of its row's axes (" +
                       std::to_string(total) + " x " + std::to_string(d.size) +
                       ") exceeds the 64-bit range");
    total = *product;
  }
  return total;
}

void require_bound(const VariableRef& ref) {
  internal_check(ref != nullptr, "null VariableRef");
  if (ref->var < 0)
    throw ShapeError("capture '" + ref->label +
                     "' is not bound yet: list it in the captures of an einsum spec and propagate it");
}

}  // namespace

VariableRef capture(std::string label) {
  auto ref = std::make_shared<CapturedVariable>();
  ref->label = std::move(label);
  return ref;
}

void bind_captures(StepRecord& rec) {
  for (const auto& c : rec.captures) {
    c.ref->var = c.var;
    c.ref->is_row = c.is_row;
    c.ref->spec = rec.spec ? rec.spec->text : "";
  }
}

void record_captures(StepRecord& rec) {
  for (const auto& c : rec.captures) c.ref->solved = current_value(*c.ref);
}

std::optional<std::int64_t> solved_dim(const VariableRef& ref) {
  require_bound(ref);
  if (ref->solved) return ref->solved;
  return current_value(*ref);
}

void set_dim(const VariableRef& ref, std::int64_t n) {
  require_bound(ref);
  if (n < 0) throw ShapeError("set_dim '" + ref->label + "': negative size " + std::to_string(n));
  auto origin = std::make_shared<Origin>();
  origin->op_name = "set_dim '" + ref->label + "'";
  origin->spec = ref->spec;
  if (ref->solved) {  // inference already finished for its spec: only a consistent value is fine
    if (*ref->solved != n)
      throw ShapeError("solved dimensions for axis: mismatch (" + std::to_string(*ref->solved) + " vs " +
                       std::to_string(n) + ") in operation '" + origin->op_name +
                       "': inference already solved it in einsum spec: " + ref->spec);
    return;
  }
  Constraint k;
  if (ref->is_row) {
    k.kind = ConstraintKind::TotalElems;
    k.rows = {Row::open(ref->var)};
    k.n = n;
    k.origin = std::move(origin);
  } else {
    // Only the size is set: a dimension already solved with a named basis keeps it.
    if (current_value(*ref) == n) return;
    k = make_dim(ConstraintKind::DimEq, Dim::variable(ref->var), Dim::solved(n), std::move(origin));
  }
  propagate_constraint(std::move(k));
}

void set_equal(const VariableRef& a, const VariableRef& b) {
  require_bound(a);
  require_bound(b);
  const auto va = solved_dim(a), vb = solved_dim(b);
  if (va && vb) {
    if (*va != *vb)
      throw ShapeError("Cannot set equal dimensions for variable references with different values: '" +
                       a->label + "' is " + std::to_string(*va) + ", '" + b->label + "' is " +
                       std::to_string(*vb));
    if (a->is_row == b->is_row && (a->solved || b->solved)) return;  // nothing left to relate
  }
  if (a->is_row != b->is_row) {  // a row's total equals a dimension: one side must be known
    if (va) return set_dim(b, *va);
    if (vb) return set_dim(a, *vb);
    throw ShapeError("set_equal: insufficient information between labels '" + a->label + "' and '" +
                     b->label + "': the total of a row variable can equal a dimension only once one "
                     "of them is solved");
  }
  if (a->solved || b->solved) return set_dim(a->solved ? b : a, a->solved ? *a->solved : *b->solved);
  auto origin = std::make_shared<Origin>();
  origin->op_name = "set_equal '" + a->label + "' '" + b->label + "'";
  origin->spec = a->spec;
  propagate_constraint(a->is_row ? make_row(ConstraintKind::RowEq, Row::open(a->var), Row::open(b->var), origin)
                                 : make_dim(ConstraintKind::DimEq, Dim::variable(a->var),
                                            Dim::variable(b->var), origin));
}

}  // namespace cannl::shape
