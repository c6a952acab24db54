#pragma once
// Shapes and global, incremental shape inference (semantics-frontend.md 1, 3, 4).
//
// Every tensor-producing operation registers an UpdateStep with `propagate`, which generates the
// step's constraints and solves what can be solved without guessing (stage 1). When dims or
// projections are needed, `finish_inference` runs the closing stages 2..7 over everything pending,
// closes every pending shape and derives the projections of every pending step. Later steps start
// fresh on top of the closed shapes.
//
//   auto a = new_shape("a", {.output = {{2, 3}}});   // output-only 2x3 "matrix" (labels i,j)
//   auto b = new_shape("b", {.output = {{3, 4}}});
//   auto c = new_shape("c");
//   int s = propagate({"matmul", c, {a, b}, Einsum{"ij;jk=>ik"}});
//   finish_inference();
//   dims(*c) == std::vector<std::int64_t>{2, 4};  projections(s).product_space == {2, 4, 3}

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cannl/ir/indexing.h"
#include "cannl/ir/tensor_node.h"
#include "cannl/shape/row.h"

namespace cannl::shape {

enum class RowKind { Batch, Input, Output };

/// Given dims of a shape; nullopt = inferred (an open row). `{.batch = {{}}}` = no batch axes.
struct ShapeSpec {
  std::optional<std::vector<std::int64_t>> batch, input, output;
};

/// A tensor shape: three rows that mention inference variables until `finish_inference`.
class Shape {
 public:
  Shape(int id, std::string debug_name) : id(id), name(std::move(debug_name)) {}
  Row& row(RowKind kind);
  const Row& row(RowKind kind) const;

  int id;
  std::string name;
  /// `generation()` when the shape was created: after a `reset` its variables and its step are
  /// gone (ids restart), so a shape of an earlier generation may not be used again.
  int generation = 0;
  Row batch, input, output;
  bool is_terminal = false;
  bool is_param = false;
};
using ShapeRef = std::shared_ptr<Shape>;

/// A new shape; rows not given in `given` are open (inferred). `new_shape("x", {.output = {{3}}})`.
ShapeRef new_shape(std::string debug_name, const ShapeSpec& given = {});

/// A new shape from a labels spec (semantics-frontend.md 1.5; grammar in `parse_labels_spec`):
/// numbers are sizes with the default basis, `rgb=3` a size with the named basis `rgb`, letters
/// dimension variables shared within the spec (`_` is a fresh one each time), `...` / `..v..`
/// row variables; an omitted row is inferred, an explicitly empty one has no axes.
///   new_shape_from_labels("img", "b|h, w, rgb=3")  // batch b, output h, w and 3 rgb channels
ShapeRef new_shape_from_labels(std::string debug_name, std::string_view labels_spec);

/// A leaf. Host data constrains the total number of elements; a scalar constant (a number) has no
/// batch/input axes and output `[1]` with the broadcastable basis; a parameter gets no batch axes
/// and its unknown dims are an error at closing ("You forgot to specify the hidden dimension(s)").
///   propagate({"w", w, {}, Terminal{.is_param = true}});
struct Terminal {
  bool is_param = false;
  std::optional<std::int64_t> total_elems;
  bool is_scalar_constant = false;
};
/// Result ⊑ each operand, row by row (broadcasting; any arity): `a + b`, `relu(a)`.
struct Pointwise {};
/// `a * b`: a's input row contracts with b's output row (semantics 2.11); a third operand, if
/// given, is added pointwise to the result (fma).
struct Compose {};
/// Swaps input and output rows: result.input ⊑ a.output, result.output ⊑ a.input.
struct Transpose {};
struct CapturedVariable;
/// A handle on a dimension or row variable of an einsum spec, named by its label (semantics
/// 2.12); see `capture`.
using VariableRef = std::shared_ptr<CapturedVariable>;

/// A full einsum spec "rhs1;rhs2=>lhs", e.g. `Einsum{"...|...->... => |->0"}` (sum to a scalar).
/// `captures` name labels or row variables of the spec whose solved sizes the caller reads back.
struct Einsum {
  std::string spec;
  std::vector<VariableRef> captures = {};
};
/// Removes the leftmost batch axis of the operand; that axis is iterated by a static index.
struct BatchSlice {
  ir::StaticSymbol index;
};
using Logic = std::variant<Terminal, Pointwise, Compose, Transpose, Einsum, BatchSlice>;

/// One tensor-producing operation: `{"add", c, {a, b}, Pointwise{}}`.
struct UpdateStep {
  std::string op_name;
  ShapeRef result;
  std::vector<ShapeRef> operands;
  Logic logic;
};

/// Registers `step` and runs stage-1 inference; returns the step id for `projections`.
/// Throws ShapeError (mismatch, too many axes, ...) or EinsumSyntaxError; on a throw the
/// inference state is left as it was before the call.
int propagate(const UpdateStep& step);

/// Closes every pending shape (stages 2..7) and derives the projections of every pending step.
/// On a throw, the pending steps and shapes linked to the failure (by a chain of shared shapes
/// and variables) are marked failed and dropped, while those of unrelated graphs built alongside
/// finish as usual; later steps infer on their own. `dims`, `projections` or a `propagate` using
/// a failed one throws ShapeError "... cannot be used: the shape inference that was to solve it
/// failed ..." with the cause.
void finish_inference();

/// Dims in memory order batch @ output @ input, e.g. `{2, 4}`. Throws ShapeError
/// "not enough shape information" while some axis is unresolved.
std::vector<std::int64_t> dims(const Shape& shape);
/// Dims of one row: `row_dims(*x, RowKind::Output)`.
std::vector<std::int64_t> row_dims(const Shape& shape, RowKind kind);

/// Projections of a step; lhs = result, rhs = operands in order. Runs `finish_inference` first
/// if the step is still pending. `projections(s).project_lhs[0].to_string() == "i12"`.
ir::Projections projections(int step_id);

/// One block of a concatenation spec (semantics-frontend.md 2.8): the projections of the cells
/// where one choice of concatenation parts is active; `live_rhs[i]` says whether operand i is read
/// in this block (a block of `a; b => a^b` reads one operand). A spec without `^` has one block.
struct Block {
  ir::Projections projections;
  std::vector<bool> live_rhs;
};
/// The blocks of a step, e.g. two for `a; b => a^b` (project_lhs `i` and `i+|a|`).
std::vector<Block> block_projections(int step_id);

/// Padding margins of a shape in memory order (batch, output, input), the maximum over the
/// padded convolutions (`o=+k`) that read it; empty when none. Valid after `finish_inference`.
///   padding(*x) == {{1, 1}}   // x read by a 3-tap `o=+k` convolution
std::vector<ir::AxisPadding> padding(const Shape& shape);

/// "B|I->O" with parts omitted when empty (`2|3->4`, `3->4`, `2|4`, `4`); unsolved `$N`; a named
/// basis prints as `rgb=3`. `PrintStyle::OnlyBases` prints the basis of each axis instead.
std::string to_string(const Shape& shape, PrintStyle style = PrintStyle::AxisSize);

/// What a VariableRef refers to once its spec has been propagated. Read it through
/// `solved_dim`; the fields are filled by inference.
struct CapturedVariable {
  std::string label;  // a dimension label (`j`) or a row variable name (`v` of `..v..`)
  std::string spec;   // the spec it was bound in; empty until then
  int var = -1;       // the inference variable, once bound
  bool is_row = false;
  std::optional<std::int64_t> solved;  // recorded when inference finishes
};

/// A new, unbound capture of the label or row variable `label`; bind it by listing it in
/// `Einsum::captures`. Unknown labels fail at propagate: "Variable 'x' not found in environments
/// for spec: ...".
///   auto j = capture("j");
///   propagate({"mm", c, {a, b}, Einsum{"ij;jk=>ik", {j}}});
///   finish_inference();  solved_dim(j) == 3   // a row variable: the product of its axes
VariableRef capture(std::string label);

/// The solved size of a captured variable (for a row variable, the product of its axes), as far
/// as inference knows it now; nullopt while unresolved. Throws ShapeError if never bound.
std::optional<std::int64_t> solved_dim(const VariableRef& ref);

/// Fixes a captured dimension to `n`, or the total number of elements of a captured row
/// variable to `n` (semantics 2.12 `set_dim`). Throws ShapeError on a conflict, leaving the
/// inference state as it was: `set_dim(j, 4)` when j is already 3 fails with "mismatch".
void set_dim(const VariableRef& ref, std::int64_t n);

/// Makes two captured variables equal (semantics 2.12 `set_equal`): two dimensions or two rows
/// are unified; a dimension and a row make the row's total equal the dimension, which needs one
/// of the two solved already ("set_equal: insufficient information between labels ..."). Values
/// that already differ fail with "Cannot set equal dimensions for variable references with
/// different values".   set_equal(capture_of_h, capture_of_w);  // a square image
void set_equal(const VariableRef& a, const VariableRef& b);

/// Clears all global inference state (for tests) and starts a new generation: shapes created
/// before it are refused afterwards (RuntimeUsageError "shape 'x' was created before
/// shape::reset()") instead of reading the variables and steps of whatever reuses their ids.
void reset();

/// The number of `reset` calls so far; `Shape::generation` records the one a shape belongs to:
///   auto x = new_shape("x");  reset();  x->generation != generation()
int generation();

}  // namespace cannl::shape
