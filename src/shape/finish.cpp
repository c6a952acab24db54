// finish_inference (semantics-frontend.md 3.7-3.9): the closing stages over everything pending,
// then the projections and padding of every pending step. When that fails, the pending parts
// that no variable, shape or step links (components.h) are finished again one by one, so only
// the parts whose constraints cannot hold are dropped, not every graph built alongside them.

#include <array>
#include <exception>
#include <map>
#include <optional>
#include <utility>

#include "cannl/shape/shape.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "shape/components.h"
#include "shape/projections.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

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

/// What finishing writes besides the solution: the records of the pending steps, the rows of
/// their shapes and of the pending ones, the values of the steps' captures, and the padding of
/// shapes (an operand finished earlier may be padded). Saved so a failed attempt is undone.
struct SavedRecords {
  std::vector<std::pair<std::size_t, StepRecord>> steps;
  std::vector<std::pair<ShapeRef, std::array<Row, 3>>> shape_rows;
  std::vector<std::pair<VariableRef, std::optional<std::int64_t>>> captures;
  std::unordered_map<int, std::vector<ir::AxisPadding>> shape_padding;
};

SavedRecords save_records(const std::vector<std::size_t>& steps, const std::vector<std::weak_ptr<Shape>>& shapes) {
  auto& s = state();
  SavedRecords saved;
  auto keep_rows = [&](const ShapeRef& sh) {
    if (sh) saved.shape_rows.push_back({sh, {sh->batch, sh->input, sh->output}});
  };
  for (std::size_t i : steps) {
    const StepRecord& rec = s.steps[i];
    saved.steps.emplace_back(i, rec);
    keep_rows(rec.step.result);
    for (const auto& o : rec.step.operands) keep_rows(o);
    for (const auto& c : rec.captures) saved.captures.emplace_back(c.ref, c.ref->solved);
  }
  for (const auto& weak : shapes) keep_rows(weak.lock());
  saved.shape_padding = s.shape_padding;
  return saved;
}

void restore_records(SavedRecords saved) {
  auto& s = state();
  for (auto& [i, rec] : saved.steps) s.steps[i] = std::move(rec);
  for (auto& [sh, rows] : saved.shape_rows) {
    sh->batch = std::move(rows[0]);
    sh->input = std::move(rows[1]);
    sh->output = std::move(rows[2]);
  }
  for (auto& [ref, value] : saved.captures) ref->solved = value;
  s.shape_padding = std::move(saved.shape_padding);
}

/// The solution and the pending constraints as closing found them.
struct SavedSolution {
  std::unordered_map<int, Dim> dim_solution;
  std::unordered_map<int, Row> row_solution;
  std::unordered_map<int, RowVarInfo> row_info;
  std::map<std::uint64_t, ConstraintRef> pending;
};

SavedSolution save_solution() {
  const auto& s = state();
  return {s.dim_solution, s.row_solution, s.row_info, s.pending};
}

void restore_solution(SavedSolution saved) {
  auto& s = state();
  s.dim_solution = std::move(saved.dim_solution);
  s.row_solution = std::move(saved.row_solution);
  s.row_info = std::move(saved.row_info);
  s.pending = std::move(saved.pending);
  rebuild_watchers();
}

std::vector<std::size_t> pending_steps() {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < state().steps.size(); ++i)
    if (state().steps[i].pending) out.push_back(i);
  return out;
}

/// Drops `steps` and `shapes` of an inference that threw: their constraints cannot all hold.
/// They are marked failed with `message`, so a later use repeats the reason instead of reading
/// a half-solved shape.
void mark_failed(const std::vector<std::size_t>& steps, const std::vector<std::weak_ptr<Shape>>& shapes,
                 const std::string& message) {
  auto& s = state();
  auto failure = std::make_shared<const std::string>(message);
  for (std::size_t i : steps) {
    StepRecord& rec = s.steps[i];
    rec.failure = failure;
    rec.pending = false;
    rec.projections.reset();
    rec.blocks.clear();
    rec.step.result.reset();
    rec.step.operands.clear();
  }
  for (const auto& weak : shapes)
    if (auto sh = weak.lock()) s.failed_shapes.emplace(sh->id, failure);
}

/// Closes and finishes `part` with the other parts set aside (their constraints, shapes and
/// steps are not pending meanwhile). Returns its error, after undoing what it wrote and marking
/// it failed; null when it finished. A deferred error of its steps goes to `deferred_error`.
std::exception_ptr finish_part(const InferenceComponent& part, const std::map<std::uint64_t, ConstraintRef>& constraints,
                               std::string& deferred_error) {
  auto& s = state();
  s.pending.clear();
  for (auto seq : part.constraints) s.pending.emplace(seq, constraints.at(seq));
  s.pending_shapes = part.shapes;
  for (std::size_t i : part.steps) s.steps[i].pending = true;
  rebuild_watchers();
  SavedRecords saved = save_records(part.steps, part.shapes);
  try {
    close_all_stages();
    std::string deferred = finish_pending_steps();
    if (deferred_error.empty()) deferred_error = std::move(deferred);
    return nullptr;
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    // Its variables are its own: their bindings go with the environment; what it wrote outside
    // the solution is undone.
    restore_records(std::move(saved));
    mark_failed(part.steps, part.shapes, describe(error));
    return error;
  }
}

/// After closing everything at once failed with `error` (and was undone): finishes each
/// independent part alone. Returns the first error of a part (null if every part finished);
/// a single part fails whole with `error`.
std::exception_ptr finish_parts_apart(std::exception_ptr error, std::string& deferred_error) {
  auto& s = state();
  const std::vector<InferenceComponent> parts = pending_components();
  if (parts.size() <= 1) {
    mark_failed(pending_steps(), s.pending_shapes, describe(error));
    return error;
  }
  const std::map<std::uint64_t, ConstraintRef> constraints = std::move(s.pending);
  for (std::size_t i : pending_steps()) s.steps[i].pending = false;
  std::exception_ptr first;
  for (const auto& part : parts)
    if (auto part_error = finish_part(part, constraints, deferred_error); part_error && !first)
      first = part_error;
  return first;
}

}  // namespace

void finish_inference() {
  const std::vector<std::size_t> attempt = pending_steps();
  SavedSolution solution = save_solution();
  SavedRecords records = save_records(attempt, state().pending_shapes);
  std::string deferred_error;
  try {
    close_all_stages();
    deferred_error = finish_pending_steps();
  } catch (...) {
    restore_solution(std::move(solution));
    restore_records(std::move(records));
    const std::exception_ptr error = finish_parts_apart(std::current_exception(), deferred_error);
    clear_environment();
    if (error) std::rethrow_exception(error);
  }
  clear_environment();
  // Thrown once the state is consistent again: the step is done, its padding was not applied.
  if (!deferred_error.empty()) throw ShapeError(deferred_error);
}

}  // namespace cannl::shape
