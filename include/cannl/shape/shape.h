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
  Row batch, input, output;
  bool is_terminal = false;
  bool is_param = false;
};
using ShapeRef = std::shared_ptr<Shape>;

/// A new shape; rows not given in `given` are open (inferred). `new_shape("x", {.output = {{3}}})`.
ShapeRef new_shape(std::string debug_name, const ShapeSpec& given = {});

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
/// A full einsum spec "rhs1;rhs2=>lhs", e.g. `Einsum{"...|...->... => |->0"}` (sum to a scalar).
struct Einsum {
  std::string spec;
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

/// "B|I->O" with parts omitted when empty (`2|3->4`, `3->4`, `2|4`, `4`); unsolved `$N`.
std::string to_string(const Shape& shape);

/// Clears all global inference state (for tests).
void reset();

}  // namespace cannl::shape
