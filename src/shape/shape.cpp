// The public inference API: shapes, propagate (stage 1), finish_inference (stages 2..7, closing,
// projections), dims and printing (semantics-frontend.md 1.6, 3.1).

#include "cannl/shape/shape.h"

#include <map>

#include "cannl/support/error.h"
#include "shape/constraint_gen.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

Row given_row(const std::optional<std::vector<std::int64_t>>& given) {
  if (!given) return Row::open(fresh_var());
  std::vector<Dim> dims;
  for (auto d : *given) {
    if (d < 0) throw ShapeError("negative dimension " + std::to_string(d) + " in a shape");
    dims.push_back(Dim::solved(d));
  }
  return Row::closed(std::move(dims));
}

/// One row of a labels spec; `dims` / `rows` share the spec's dimension and row variables.
Row labels_row(const RowSpec& spec, std::map<std::string, int>& dims, std::map<std::string, int>& rows) {
  if (spec.omitted) return Row::open(fresh_var());
  auto dim_of = [&](const AxisSpec& a) {
    if (a.kind == AxisSpec::Kind::Fixed)
      return Dim::solved(a.index, a.basis.empty() ? Basis{} : Basis::named(a.basis));
    if (a.label == "_") return Dim::variable(fresh_var());  // a placeholder, not a shared label
    auto [it, fresh] = dims.emplace(a.label, -1);
    if (fresh) it->second = fresh_var();
    return Dim::variable(it->second);
  };
  Row r;
  for (const auto& a : spec.beg) r.beg.push_back(dim_of(a));
  for (const auto& a : spec.dims) r.dims.push_back(dim_of(a));
  if (!spec.has_ellipsis) return r;
  if (spec.is_context) {
    r.var = fresh_var();
  } else {
    auto [it, fresh] = rows.emplace(spec.var_name, -1);
    if (fresh) it->second = fresh_var();
    r.var = it->second;
  }
  return r;
}

bool is_closed(const Row& r) {
  if (r.is_open()) return false;
  for (const auto& d : r.dims)
    if (d.is_var()) return false;
  return true;
}

/// The error for using `what` after the inference that was to solve it failed with `failure`.
ShapeError failed_earlier(const std::string& what, const std::string& failure) {
  return ShapeError(what + " cannot be used: the shape inference that was to solve it failed, and "
                    "so did every tensor built since the inference before it that shares a shape or an "
                    "axis with the failure; build them again with the cause fixed. The inference failed "
                    "with:\n" + failure);
}

/// Throws when `shape` was created before the last `reset`: its variable ids and step now name
/// those of shapes created since, so reading it would mix two graphs.
void check_current(const Shape& shape) {
  if (shape.generation == state().generation) return;
  throw RuntimeUsageError("shape '" + shape.name + "' was created before shape::reset() (generation " +
                          std::to_string(shape.generation) + ", now " + std::to_string(state().generation) +
                          "): the inference state it refers to was cleared; create it again after the reset");
}

/// Throws when `shape` is stale (an earlier generation) or belongs to a failed inference attempt.
void check_usable(const Shape& shape) {
  check_current(shape);
  const auto& failed = state().failed_shapes;
  if (auto it = failed.find(shape.id); it != failed.end())
    throw failed_earlier("shape '" + shape.name + "'", *it->second);
}

}  // namespace

Row& Shape::row(RowKind kind) {
  return kind == RowKind::Batch ? batch : kind == RowKind::Input ? input : output;
}
const Row& Shape::row(RowKind kind) const {
  return kind == RowKind::Batch ? batch : kind == RowKind::Input ? input : output;
}

ShapeRef new_shape(std::string debug_name, const ShapeSpec& given) {
  auto& s = state();
  auto shape = std::make_shared<Shape>(s.next_shape++, std::move(debug_name));
  shape->generation = s.generation;
  shape->batch = given_row(given.batch);
  shape->input = given_row(given.input);
  shape->output = given_row(given.output);
  s.pending_shapes.push_back(shape);
  return shape;
}

ShapeRef new_shape_from_labels(std::string debug_name, std::string_view labels_spec) {
  const SlotSpec slot = parse_labels_spec(labels_spec);
  auto shape = new_shape(std::move(debug_name));
  std::map<std::string, int> dims, rows;
  shape->batch = labels_row(slot.batch, dims, rows);
  shape->input = labels_row(slot.input, dims, rows);
  shape->output = labels_row(slot.output, dims, rows);
  return shape;
}

void propagate_constraint(Constraint k) {
  auto& s = state();
  Snapshot snap = begin_step();
  try {
    add_pending(std::make_shared<const Constraint>(std::move(k)), true);
    solve(1);
    end_step();
  } catch (...) {
    restore(std::move(snap));
    throw;
  }
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock()) write_back(*sh);
}

int propagate(const UpdateStep& step) {
  auto& s = state();
  check_current(*step.result);
  for (const auto& o : step.operands) check_usable(*o);
  const int id = static_cast<int>(s.steps.size());
  Snapshot snap = begin_step();
  StepRecord fresh;
  fresh.step = step;
  s.steps.push_back(std::move(fresh));
  try {
    auto origin = std::make_shared<Origin>();
    origin->op_name = step.op_name;
    origin->shapes.push_back(step.result);
    origin->shapes.insert(origin->shapes.end(), step.operands.begin(), step.operands.end());
    origin->step_id = id;
    if (const auto* e = std::get_if<Einsum>(&step.logic)) origin->spec = e->spec;
    auto constraints = generate_constraints(s.steps.back(), origin);
    for (const auto& o : step.operands)
      if (s.operand_shapes.insert(o->id).second) snap.added_operands.push_back(o->id);
    for (auto& k : constraints) add_pending(std::make_shared<const Constraint>(std::move(k)), true);
    solve(1);
    write_back_step(step);
    end_step();
  } catch (...) {
    restore(std::move(snap));
    s.steps.pop_back();
    throw;
  }
  bind_captures(s.steps.back());
  return id;
}

std::vector<std::int64_t> row_dims(const Shape& shape, RowKind kind) {
  check_usable(shape);
  const Row r = subst(shape.row(kind));
  if (!is_closed(r))
    throw ShapeError("not enough shape information: unresolved variable in shape '" + shape.name +
                     "' (" + to_string(shape) + "); call finish_inference() first");
  std::vector<std::int64_t> out;
  for (const auto& d : r.dims) out.push_back(d.size);
  return out;
}

std::vector<std::int64_t> dims(const Shape& shape) {
  std::vector<std::int64_t> out = row_dims(shape, RowKind::Batch);
  for (RowKind k : {RowKind::Output, RowKind::Input}) {
    const auto part = row_dims(shape, k);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

ir::Projections projections(int step_id) {
  auto& s = state();
  if (step_id < 0 || step_id >= static_cast<int>(s.steps.size()))
    throw ShapeError("no update step with id " + std::to_string(step_id));
  if (s.steps[static_cast<std::size_t>(step_id)].pending) finish_inference();
  const StepRecord& rec = s.steps[static_cast<std::size_t>(step_id)];
  if (rec.failure) throw failed_earlier("operation '" + rec.step.op_name + "'", *rec.failure);
  return *rec.projections;
}

std::vector<Block> block_projections(int step_id) {
  projections(step_id);
  return state().steps[static_cast<std::size_t>(step_id)].blocks;
}

std::vector<ir::AxisPadding> padding(const Shape& shape) {
  auto& s = state();
  s.padding_resolved.insert(shape.id);
  auto it = s.shape_padding.find(shape.id);
  return it == s.shape_padding.end() ? std::vector<ir::AxisPadding>{} : it->second;
}

std::string to_string(const Shape& shape, PrintStyle style) {
  const std::string b = row_to_string(subst(shape.batch), style);
  const std::string i = row_to_string(subst(shape.input), style);
  const std::string o = row_to_string(subst(shape.output), style);
  if (b.empty() && i.empty()) return o;
  if (b.empty()) return i + "->" + o;
  if (i.empty()) return b + "|" + o;
  return b + "|" + i + "->" + o;
}

void reset() {
  const int next_generation = state().generation + 1;
  state() = State{};
  state().generation = next_generation;
}

int generation() { return state().generation; }

}  // namespace cannl::shape
