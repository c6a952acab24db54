// Capture of solved dimensions (semantics-frontend.md 2.12): reading the size inference found for
// a label or a row variable of an einsum spec, and fixing it with set_dim.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Capture : public ShapeTest {};

ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

ShapeRef open_output(const std::string& name) { return leaf(name, {.batch = {{}}, .input = {{}}}); }

int captured(const std::string& spec, std::vector<ShapeRef> operands, std::vector<VariableRef> refs,
             ShapeRef* result = nullptr) {
  auto r = new_shape("r");
  if (result) *result = r;
  return propagate({"einsum", r, std::move(operands), Einsum{spec, std::move(refs)}});
}

TEST_F(Capture, ContractedLabelIsKnownOnlineAndAfterClosing) {
  auto j = capture("j");
  captured("|->ij; |->jk => |->ik", {out_only("a", {2, 3}), out_only("b", {3, 4})}, {j});
  EXPECT_EQ(solved_dim(j), 3);  // stage 1 already knows it
  finish_inference();
  EXPECT_EQ(solved_dim(j), 3);
  EXPECT_EQ(j->spec, "|->ij; |->jk => |->ik");
}

TEST_F(Capture, UnresolvedUntilClosing) {
  auto i = capture("i");
  captured("|->i => |->i", {open_output("x")}, {i});
  EXPECT_EQ(solved_dim(i), std::nullopt);
  finish_inference();
  EXPECT_EQ(solved_dim(i), 1);  // an unconstrained leaf axis closes to the broadcastable 1
}

TEST_F(Capture, RowVariableGivesTheProductOfItsAxes) {
  auto v = capture("v");
  auto x = leaf("x", {.batch = {{2, 3}}, .input = {{}}, .output = {{5}}});
  captured("..v..|->i => ..v..|->i", {x}, {v});
  EXPECT_EQ(solved_dim(v), 6);
}

TEST_F(Capture, InferredKernelSize) {
  auto k = capture("k");
  auto x = out_only("x", {6});
  auto r = new_shape("r", {.batch = {{}}, .input = {{}}, .output = {{4}}});
  propagate({"conv", r, {x, open_output("w")}, Einsum{"|->o<+k; |->k => |->o", {k}}});
  EXPECT_EQ(solved_dim(k), 3);
}

TEST_F(Capture, SetDimFixesALabel) {
  auto i = capture("i");
  ShapeRef r;
  auto x = open_output("x");
  captured("|->i => |->i", {x}, {i}, &r);
  set_dim(i, 7);
  EXPECT_EQ(solved_dim(i), 7);
  finish_inference();
  EXPECT_EQ(dims(*r), (Dims{7}));
  EXPECT_EQ(dims(*x), (Dims{7}));
}

TEST_F(Capture, SetDimOfARowVariableFixesItsTotal) {
  auto v = capture("v");
  ShapeRef r;
  captured("|->..v.. => |->..v..", {open_output("x")}, {v}, &r);
  set_dim(v, 12);
  finish_inference();
  EXPECT_EQ(dims(*r), (Dims{12}));  // one axis carries the whole total
  EXPECT_EQ(solved_dim(v), 12);
}

TEST_F(Capture, SetDimRowTotalMustDivideTheKnownAxes) {
  auto v = capture("v");
  captured("|->..v.. => |->..v..", {out_only("x", {2, 3})}, {v});
  expect_error<ShapeError>([&] { set_dim(v, 5); }, "Total_elems constraint: the data has 5 elements");
  EXPECT_EQ(solved_dim(v), 6);
}

TEST_F(Capture, SetDimConflictLeavesTheStateAsItWas) {
  auto j = capture("j");
  captured("|->ij; |->jk => |->ik", {out_only("a", {2, 3}), out_only("b", {3, 4})}, {j});
  const auto msg = expect_error<ShapeError>([&] { set_dim(j, 4); }, "solved dimensions for axis: mismatch (3 vs 4)");
  EXPECT_NE(msg.find("in operation 'set_dim 'j''"), std::string::npos) << msg;
  set_dim(j, 3);  // agreeing is fine
  finish_inference();
  EXPECT_EQ(solved_dim(j), 3);
  set_dim(j, 3);
  expect_error<ShapeError>([&] { set_dim(j, 2); }, "inference already solved it");
}

TEST_F(Capture, SetDimKeepsANamedBasis) {
  auto i = capture("i");
  auto x = new_shape_from_labels("x", "|->rgb=3");
  propagate({"x", x, {}, Terminal{}});
  ShapeRef r;
  captured("|->i => |->i", {x}, {i}, &r);
  set_dim(i, 3);
  finish_inference();
  EXPECT_EQ(to_string(*r), "rgb=3");
}

TEST_F(Capture, UnknownLabelIsAnError) {
  auto q = capture("q");
  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {3, 4});
  expect_error<ShapeError>([&] { captured("|->ij; |->jk => |->ik", {a, b}, {q}); },
                           "Variable 'q' not found in environments for spec: |->ij; |->jk => |->ik");
  EXPECT_EQ(q->var, -1);
  expect_error<ShapeError>([&] { solved_dim(q); }, "capture 'q' is not bound yet");
  auto j = capture("j");
  captured("|->ij; |->jk => |->ik", {a, b}, {j});  // the failed step left nothing behind
  EXPECT_EQ(solved_dim(j), 3);
}

TEST_F(Capture, ACaptureBindsOnce) {
  auto i = capture("i");
  captured("|->i => |->i", {out_only("a", {2})}, {i});
  expect_error<ShapeError>([&] { captured("|->i => |->i", {out_only("b", {3})}, {i}); },
                           "capture 'i' is already bound to spec: |->i => |->i");
  EXPECT_EQ(solved_dim(i), 2);
}

TEST_F(Capture, NegativeSetDim) {
  auto i = capture("i");
  captured("|->i => |->i", {open_output("x")}, {i});
  expect_error<ShapeError>([&] { set_dim(i, -1); }, "negative size -1");
}

TEST_F(Capture, SetEqualUnifiesTwoDimensions) {
  auto h = capture("h"), w = capture("w");
  auto x = open_output("x");
  captured("|->h, w => |->h, w", {x}, {h, w});
  set_equal(h, w);
  set_dim(w, 4);
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{4, 4}));
}

TEST_F(Capture, SetEqualOfDifferentValues) {
  auto i = capture("i"), j = capture("j");
  captured("|->i, j => |->i, j", {out_only("a", {2, 3})}, {i, j});
  expect_error<ShapeError>([&] { set_equal(i, j); },
                           "Cannot set equal dimensions for variable references with different values: 'i' is 2, 'j' is 3");
}

TEST_F(Capture, SetEqualDimensionAndRowTotal) {
  auto i = capture("i"), v = capture("v");
  captured("|->i => |->i", {out_only("a", {6})}, {i});
  ShapeRef r;
  captured("|->..v.. => |->..v..", {open_output("y")}, {v}, &r);
  set_equal(i, v);
  finish_inference();
  EXPECT_EQ(dims(*r), (Dims{6}));
}

TEST_F(Capture, SetEqualNeedsInformationBetweenADimensionAndARow) {
  auto i = capture("i"), v = capture("v");
  captured("|->i, ..v.. => |->i, ..v..", {open_output("y")}, {i, v});
  expect_error<ShapeError>([&] { set_equal(i, v); }, "set_equal: insufficient information between labels 'i' and 'v'");
}

}  // namespace
}  // namespace cannl::shape::testing
