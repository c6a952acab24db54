// The public inference API: shapes, propagate (stage 1), finish_inference (stages 2..7, closing,
// projections), dims and printing (semantics-frontend.md 1.6, 3.1).

#include "cannl/shape/shape.h"

#include <exception>
#include <map>

#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "shape/constraint_gen.h"
#include "shape/projections.h"
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

/// "" when every count of the step fits int64: the elements of its result and operands and the
/// points of each block's product space; else a ShapeError message naming the operation, its
/// spec, the shape and the axis at which the product overflowed.
std::string size_overflow(const StepRecord& rec) {
  const auto* einsum = std::get_if<Einsum>(&rec.step.logic);
  const std::string where = " in operation '" + rec.step.op_name + "'" +
                            (einsum ? " (einsum spec: " + einsum->spec + ")" : "");
  auto check = [&](const std::vector<std::int64_t>& sizes, const std::string& what) -> std::string {
    std::int64_t product = 1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const auto next = checked_mul(product, sizes[i]);
      if (next) { product = *next; continue; }
      if (checked_product(sizes)) return "";  // a later zero axis: no elements at all
      return "size overflow: " + what + " has more elements than fit in 64 bits (the product of axes 1.." +
             std::to_string(i + 1) + " is " + std::to_string(product) + " x " +
             std::to_string(sizes[i]) + ")" + where;
    }
    return "";
  };
  std::vector<ShapeRef> shapes{rec.step.result};
  shapes.insert(shapes.end(), rec.step.operands.begin(), rec.step.operands.end());
  for (const auto& sh : shapes) {
    if (!sh) continue;
    std::vector<std::int64_t> sizes;
    try {
      sizes = dims(*sh);
    } catch (const ShapeError&) {
      continue;  // still open: reported where its dims are asked for
    }
    if (std::string e = check(sizes, "shape '" + sh->name + "' (" + to_string(*sh) + ")"); !e.empty())
      return e;
  }
  for (const auto& b : rec.blocks) {
    std::string e = check(b.projections.product_space, "the loop nest (product space)");
    if (!e.empty()) return e;
  }
  return "";
}

/// What a failed propagate must restore besides the trail (bindings, row infos, pending set).
struct Snapshot {
  int next_var;
  std::vector<int> added_operands;
};

Snapshot begin_step() {
  auto& s = state();
  s.trail = State::Trail{};
  s.trail.active = true;
  return {s.next_var, {}};
}

void end_step() { state().trail = State::Trail{}; }

void restore(Snapshot snap) {
  auto& s = state();
  for (int v : s.trail.dims) s.dim_solution.erase(v);
  for (int v : s.trail.rows) s.row_solution.erase(v);
  for (auto it = s.trail.infos.rbegin(); it != s.trail.infos.rend(); ++it) {
    if (it->second) s.row_info[it->first] = *it->second;
    else s.row_info.erase(it->first);
  }
  auto& log = s.trail.pending_log;
  for (auto it = log.rbegin(); it != log.rend(); ++it) {
    if (it->second) s.pending[it->first] = it->second;
    else s.pending.erase(it->first);
  }
  rebuild_watchers();
  s.next_var = snap.next_var;
  for (int id : snap.added_operands) s.operand_shapes.erase(id);
  end_step();
}

void write_back_step(const UpdateStep& step) {
  write_back(*step.result);
  for (const auto& o : step.operands) write_back(*o);
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

std::string paddings_to_string(const std::vector<ir::AxisPadding>& p) {
  std::string out;
  for (const auto& a : p) out += (out.empty() ? "" : ", ") + std::to_string(a.left) + "+" + std::to_string(a.right);
  return "(" + out + ")";
}

/// Merges the padding operand `i` of `rec` needs into the operand's padding. A shape whose padding
/// was already read (its buffers are laid out) may not need more: returns the error then.
std::string merge_operand_padding(const StepRecord& rec, std::size_t i) {
  auto& s = state();
  const Shape& operand = *rec.step.operands[i];
  auto& into = s.shape_padding[operand.id];
  std::vector<ir::AxisPadding> merged = into;
  merge_padding(merged, rec.paddings[i]);
  if (!s.padding_resolved.count(operand.id)) {
    into = std::move(merged);
    return "";
  }
  std::vector<ir::AxisPadding> resolved = into;
  resolved.resize(merged.size());
  for (std::size_t a = 0; a < merged.size(); ++a)
    if (merged[a].left > resolved[a].left || merged[a].right > resolved[a].right)
      return "Operation padding " + paddings_to_string(rec.paddings[i]) + " exceeds resolved padding " +
             paddings_to_string(resolved) + " of '" + operand.name + "' in operation '" +
             rec.step.op_name + "'" + (rec.spec ? " (" + rec.spec->text + ")" : "") +
             ": its buffers were laid out before this convolution read it; create the padded "
             "convolution before the first compile that uses '" + operand.name + "'";
  return "";
}

bool is_closed(const Row& r) {
  if (r.is_open()) return false;
  for (const auto& d : r.dims)
    if (d.is_var()) return false;
  return true;
}

/// Stages 2..7 of semantics 3.7: solve, then close what the stage closes, until nothing changes.
void close_all_stages() {
  for (int stage = 2; stage <= 7; ++stage) {
    for (int round = 0; round < 10000; ++round) {
      solve(stage);
      if (!close_stage(stage)) break;
    }
  }
}

/// Writes the solution into the pending shapes and derives the projections (and padding) of
/// every pending step. Returns the first error that may wait until the environment is cleared
/// (a size overflow, a padding that grows after it was read), "" if none.
std::string finish_pending_steps() {
  auto& s = state();
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock()) write_back(*sh);
  std::string deferred_error;
  for (auto& rec : s.steps) {
    if (!rec.pending) continue;
    write_back_step(rec.step);
    record_captures(rec);
    derive_projections(rec);
    if (deferred_error.empty()) deferred_error = size_overflow(rec);
    for (std::size_t i = 0; i < rec.paddings.size(); ++i) {
      const std::string e = merge_operand_padding(rec, i);
      if (deferred_error.empty()) deferred_error = e;
    }
    rec.pending = false;
    rec.step.result.reset();  // the shapes are concrete now; do not keep them alive
    rec.step.operands.clear();
  }
  return deferred_error;
}

/// Forgets the variables, constraints and pending shapes of one inference attempt: what stays
/// are the finished steps, the padding of shapes, and the record of failed shapes.
void clear_environment() {
  auto& s = state();
  s.dim_solution.clear();
  s.row_solution.clear();
  s.row_info.clear();
  s.pending.clear();
  s.watchers.clear();
  s.worklist.clear();
  s.pending_shapes.clear();
  s.operand_shapes.clear();
}

std::string describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown error";
  }
}

/// A finish_inference that threw: its constraints cannot all hold. Left pending, they (and the
/// failed constraint the solver keeps) would make every later inference fail the same way, so
/// the attempt is dropped: its steps and shapes are marked failed with `message` (a later use
/// repeats the reason instead of reading a half-solved shape) and the environment is cleared,
/// as after a success.
void abandon_inference(const std::vector<std::size_t>& attempt, const std::string& message) {
  auto& s = state();
  auto failure = std::make_shared<const std::string>(message);
  for (std::size_t i : attempt) {
    StepRecord& rec = s.steps[i];
    rec.failure = failure;
    rec.pending = false;
    rec.projections.reset();
    rec.blocks.clear();
    rec.step.result.reset();
    rec.step.operands.clear();
  }
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock()) s.failed_shapes.emplace(sh->id, failure);
  clear_environment();
}

/// The error for using `what` after the inference that was to solve it failed with `failure`.
ShapeError failed_earlier(const std::string& what, const std::string& failure) {
  return ShapeError(what + " cannot be used: the shape inference that was to solve it failed, and "
                    "every tensor built since the previous successful inference failed with it; "
                    "build them again with the cause fixed. The inference failed with:\n" + failure);
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

void finish_inference() {
  std::vector<std::size_t> attempt;  // the steps this call is to finish
  for (std::size_t i = 0; i < state().steps.size(); ++i)
    if (state().steps[i].pending) attempt.push_back(i);
  std::string deferred_error;
  try {
    close_all_stages();
    deferred_error = finish_pending_steps();
  } catch (...) {
    abandon_inference(attempt, describe(std::current_exception()));
    throw;
  }
  clear_environment();
  // Thrown once the state is consistent again: the step is done, its padding was not applied.
  if (!deferred_error.empty()) throw ShapeError(deferred_error);
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
