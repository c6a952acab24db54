// Shape inference: broadcasting, compose, einsum reductions, row variables, closing.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Solver : public ShapeTest {};

TEST_F(Solver, PointwiseSameShapes) {
  auto a = leaf("a", {.batch = {{2}}, .input = {{}}, .output = {{3}}});
  auto b = leaf("b", {.batch = {{2}}, .input = {{}}, .output = {{3}}});
  auto c = op("c", Pointwise{}, {a, b});
  finish_inference();
  EXPECT_EQ(dims(*c), (Dims{2, 3}));
  EXPECT_EQ(to_string(*c), "2|3");
}

TEST_F(Solver, PointwiseOperandWithFewerAxes) {
  auto a = leaf("a", {.batch = {{4}}, .input = {{}}, .output = {{2, 3}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{}}, .output = {{3}}});
  auto c = op("c", Pointwise{}, {a, b});
  finish_inference();
  EXPECT_EQ(dims(*c), (Dims{4, 2, 3}));
}

TEST_F(Solver, ScalarConstantBroadcasts) {
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{5}}});
  auto k = scalar();
  auto c = op("c", Pointwise{}, {a, k});
  finish_inference();
  EXPECT_EQ(dims(*c), (Dims{5}));
  EXPECT_EQ(dims(*k), (Dims{1}));
}

TEST_F(Solver, UserWrittenOneDoesNotBroadcast) {
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{5}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{}}, .output = {{1}}});
  expect_error<ShapeError>([&] { op("add", Pointwise{}, {a, b}); }, "dimension comparison for axis: mismatch");
}

TEST_F(Solver, MatmulShapesViaCompose) {
  auto w = leaf("w", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto x = leaf("x", {.batch = {{8}}, .input = {{}}, .output = {{3}}});
  auto y = op("y", Compose{}, {w, x});
  finish_inference();
  EXPECT_EQ(to_string(*y), "8|4");
  EXPECT_EQ(dims(*y), (Dims{8, 4}));
}

TEST_F(Solver, ParamInputInferredFromCompose) {
  auto w = param("w", {.output = {{64}}});
  auto x = leaf("x", {.batch = {{8}}, .input = {{}}, .output = {{2}}});
  auto h = op("h", Compose{}, {w, x});
  finish_inference();
  EXPECT_EQ(to_string(*w), "2->64");
  EXPECT_EQ(to_string(*h), "8|64");
}

TEST_F(Solver, EinsumMatmul) {
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{2, 3}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{}}, .output = {{3, 4}}});
  auto c = einsum("ij;jk=>ik", {a, b});
  finish_inference();
  EXPECT_EQ(dims(*c), (Dims{2, 4}));
}

TEST_F(Solver, SumToScalar) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{5}}, .output = {{3}}});
  auto s = einsum("...|...->... => |->0", {x});
  finish_inference();
  EXPECT_EQ(dims(*s), (Dims{1}));
}

TEST_F(Solver, UnknownLeafGuessesOne) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}, .output = std::nullopt});
  auto y = leaf("y", {.batch = {{}}, .input = {{}}, .output = {{3}}});
  auto z = einsum("i;j=>ij", {x, y});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{1}));
  EXPECT_EQ(dims(*z), (Dims{1, 3}));
}


ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST_F(Solver, ComposeParamInputFromLaterUse) {
  // x * w: w's output is given, its input is only known from how the result is used later.
  auto x = leaf("x", {.batch = {{8}}, .input = {{3}}, .output = {{5}}});
  auto w = param("w", {.output = {{3}}});
  auto h = op("h", Compose{}, {x, w});
  auto y = leaf("y", {.batch = {{}}, .input = {{6}}, .output = {{5}}});
  auto z = op("z", Pointwise{}, {h, y});
  finish_inference();
  EXPECT_EQ(to_string(*w), "6->3");
  EXPECT_EQ(to_string(*z), "8|6->5");
}

TEST_F(Solver, ParamShapeFromGlbThroughCompose) {
  // [1;2] + (w * [3;4;5])  =>  w : 3->2   (semantics 3.7)
  auto w = param("w");
  auto v = out_only("v", {3});
  auto h = op("h", Compose{}, {w, v});
  auto u = out_only("u", {2});
  op("sum", Pointwise{}, {u, h});
  finish_inference();
  EXPECT_EQ(to_string(*w), "3->2");
}

TEST_F(Solver, PerRowReductionWithEllipsis) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{5}}});
  auto s = einsum("...|i => ...|0", {x});
  finish_inference();
  EXPECT_EQ(to_string(*s), "2|1");
}

TEST_F(Solver, ReducedAxisBroadcastsBack) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{5}}});
  auto s = einsum("...|... => ...|0", {x});
  auto d = op("sub", Pointwise{}, {x, s});
  finish_inference();
  EXPECT_EQ(to_string(*s), "2|1");
  EXPECT_EQ(to_string(*d), "2|5");
}

TEST_F(Solver, NamedRowVariableMovesBatchToOutput) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{3, 4, 5}}});
  auto y = einsum("..v..|...ijk => ..v..kji", {x});
  finish_inference();
  EXPECT_EQ(to_string(*y), "2,5,4,3");
}

TEST_F(Solver, LeadingAndTrailingAxesAroundEllipsis) {
  auto x = out_only("x", {2, 3, 4, 5});
  auto y = einsum("a...b => ...ba", {x});
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{3, 4, 5, 2}));
}

TEST_F(Solver, LeadingAxesInferOpenResult) {
  auto x = out_only("x", {7, 2});
  auto y = einsum("j... => ...j", {x});
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{2, 7}));
}

TEST_F(Solver, OmittedSeparatorReadsAsContext) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{3}}, .output = {{4}}});
  auto y = einsum("x => x", {x});
  finish_inference();
  EXPECT_EQ(to_string(*y), "2|3->4");
}

TEST_F(Solver, ExplicitEmptyRowsAreClosed) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{3}}, .output = {{4}}});
  expect_error<ShapeError>([&] { einsum("|->x => |->x", {x}); }, "Mismatching number of axes");
  expect_error<ShapeError>([&] { einsum("->x => x", {x}); }, "Mismatching number of axes");
  auto y = einsum("|...->x => ...->x", {leaf("z", {.batch = {{}}, .input = {{3}}, .output = {{4}}})});
  finish_inference();
  EXPECT_EQ(to_string(*y), "3->4");
}

TEST_F(Solver, NoInputSeparator) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{4}}});
  auto y = einsum("->x => ->x", {x});
  auto z = leaf("z", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto w = einsum("|x => |x", {z});
  finish_inference();
  EXPECT_EQ(to_string(*y), "2|4");
  EXPECT_EQ(to_string(*w), "3->4");
}

TEST_F(Solver, FixedIndexLowerBoundOnResult) {
  auto x = out_only("x", {4});
  auto y = einsum("i=>i0", {x});
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{4, 1}));
}

TEST_F(Solver, FixedIndexLowerBoundsAcrossOperations) {
  auto x = out_only("x", {4});
  auto y = einsum("i=>i0", {x});
  auto z = einsum("i2=>i", {y});
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{4, 3}));
  EXPECT_EQ(dims(*z), (Dims{4}));
}

TEST_F(Solver, MulticharSpec) {
  auto x = leaf("x", {.batch = {{8}}, .input = {{}}, .output = {{3}}});
  auto w = leaf("w", {.batch = {{}}, .input = {{3}}, .output = {{5}}});
  auto y = einsum("batch,|->inp; |inp->hid => batch|->hid", {x, w});
  finish_inference();
  EXPECT_EQ(to_string(*y), "8|5");
}

TEST_F(Solver, TotalElementsDetermineUnknownRow) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}}, Terminal{.total_elems = 12});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{12}));
}

TEST_F(Solver, OneElementDataKeepsOneAxis) {
  // 1-element data with omitted rows and no other information is a [1] tensor, not a scalar.
  auto x = leaf("x", {.batch = {{}}, .input = {{}}}, Terminal{.total_elems = 1});
  auto all_open = leaf("y", {}, Terminal{.total_elems = 1});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{1}));
  EXPECT_EQ(dims(*all_open), (Dims{1}));
  // With another axis holding the data, the leftover row still closes empty.
  auto z = leaf("z", {.input = {{}}, .output = {{6}}}, Terminal{.total_elems = 6});
  finish_inference();
  EXPECT_EQ(to_string(*z), "6");
}

TEST_F(Solver, TotalElementsSolveOneUnknownAxis) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}}, Terminal{.total_elems = 12});
  auto y = out_only("y", {3});
  auto z = einsum("ab;b=>a", {x, y});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{4, 3}));
  EXPECT_EQ(dims(*z), (Dims{4}));
}

TEST_F(Solver, LeafClosesDownToItsUses) {
  auto x = leaf("x");
  auto a = leaf("a", {.batch = {{2}}, .input = {{}}, .output = {{3}}});
  auto c = op("c", Pointwise{}, {a, x});
  finish_inference();
  EXPECT_EQ(to_string(*x), "2|3");
  EXPECT_EQ(to_string(*c), "2|3");
}

TEST_F(Solver, LeafUsedWithTwoSizesBroadcasts) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}});
  auto a = out_only("a", {3});
  auto b = out_only("b", {5});
  op("c", Pointwise{}, {a, x});
  op("d", Pointwise{}, {b, x});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{1}));
}

TEST_F(Solver, BatchSliceShapes) {
  auto x = leaf("x", {.batch = {{6, 2}}, .input = {{}}, .output = {{3}}});
  auto y = op("slice", BatchSlice{ir::StaticSymbol{ir::fresh_symbol(), 0, "i"}}, {x});
  finish_inference();
  EXPECT_EQ(to_string(*y), "2|3");
}

TEST_F(Solver, IncrementalInferenceAcrossFinish) {
  auto a = out_only("a", {2, 3});
  auto b = out_only("b", {3, 4});
  auto c = einsum("ij;jk=>ik", {a, b});
  finish_inference();
  auto d = op("d", Pointwise{}, {c, scalar()});
  finish_inference();
  EXPECT_EQ(dims(*d), (Dims{2, 4}));
}

TEST_F(Solver, ShapeStringForms) {
  auto a = leaf("a", {.batch = {{2}}, .input = {{3}}, .output = {{4}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto c = leaf("c", {.batch = {{4}}, .input = {{}}, .output = {{}}});
  auto d = leaf("d", {.batch = {{}}, .input = {{}}, .output = {{5, 6}}});
  finish_inference();
  EXPECT_EQ(to_string(*a), "2|3->4");
  EXPECT_EQ(to_string(*b), "3->4");
  EXPECT_EQ(to_string(*c), "4|");
  EXPECT_EQ(to_string(*d), "5,6");
  EXPECT_EQ(row_dims(*a, RowKind::Input), (Dims{3}));
  EXPECT_EQ(dims(*a), (Dims{2, 4, 3}));  // batch @ output @ input
}

TEST_F(Solver, UnsolvedShapesPrintVariables) {
  auto x = new_shape("x");
  EXPECT_NE(to_string(*x).find("..$"), std::string::npos);
}

TEST_F(Solver, LoneParamCloses) {
  auto w = param("w");
  EXPECT_NO_THROW(finish_inference());
  EXPECT_NO_THROW(dims(*w));
}

TEST_F(Solver, FmaComposeAddsThirdOperand) {
  auto w = leaf("w", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto x = leaf("x", {.batch = {{8}}, .input = {{}}, .output = {{3}}});
  auto b = param("b");
  auto y = op("fma", Compose{}, {w, x, b});
  finish_inference();
  EXPECT_EQ(to_string(*y), "8|4");
  EXPECT_EQ(to_string(*b), "4");  // params have no batch axes
}


TEST_F(Solver, MlpShapesInferredFromUse) {
  auto x = leaf("x", {.batch = {{64}}, .input = {{}}, .output = {{2}}});
  auto w1 = param("w1", {.output = {{16}}});
  auto b1 = param("b1");
  auto h = op("h", Pointwise{}, {op("mul1", Compose{}, {w1, x}), b1});
  auto r = op("relu", Pointwise{}, {h});
  auto w2 = param("w2", {.output = {{1}}});
  auto b2 = param("b2");
  auto y = op("y", Pointwise{}, {op("mul2", Compose{}, {w2, r}), b2});
  finish_inference();
  EXPECT_EQ(to_string(*w1), "2->16");
  EXPECT_EQ(to_string(*b1), "16");
  EXPECT_EQ(to_string(*w2), "16->1");
  EXPECT_EQ(to_string(*b2), "1");
  EXPECT_EQ(to_string(*y), "64|1");
}

TEST_F(Solver, ComposeWithScalarSumsInputAxes) {
  auto x = leaf("x", {.batch = {{}}, .input = {{3}}, .output = {{2}}});
  auto y = op("mul", Compose{}, {x, scalar()});
  finish_inference();
  EXPECT_EQ(to_string(*y), "2");
}

}  // namespace
}  // namespace cannl::shape::testing
