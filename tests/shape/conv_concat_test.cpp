// Shape inference and projections of strided / convolution axes (semantics-frontend.md 2.7) and
// concatenation (2.8): sizes, padding, affine indices, blocks.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class ConvConcat : public ShapeTest {};

using ir::AxisIndex;

ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

Dims out_dims(const ShapeRef& s) { return row_dims(*s, RowKind::Output); }

TEST_F(ConvConcat, ValidConv1dDoesNotHang) {
  int step = -1;
  auto c = einsum("o<+k; k => o", {out_only("x", {10}), out_only("w", {3})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{8}));
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{8, 3}));
  const auto o = AxisIndex::iterator(p.product_iterators[0]);
  const auto k = AxisIndex::iterator(p.product_iterators[1]);
  EXPECT_EQ(p.project_rhs[1], (std::vector<AxisIndex>{k}));
  EXPECT_EQ(p.project_rhs[0][0].to_string(), (AxisIndex{{{1, o.terms[0].symbol}, {1, k.terms[0].symbol}}, 0}).to_string());
  EXPECT_TRUE(padding(*c).empty());
}

TEST_F(ConvConcat, ValidConvStride2) {
  auto c = einsum("2*o<+k; k => o", {out_only("x", {9}), out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{4}));
}

TEST_F(ConvConcat, ValidConvDilation2) {
  auto c = einsum("o<+2*k; k => o", {out_only("x", {9}), out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5}));  // span 5
}

TEST_F(ConvConcat, ValidConvStride2Dilation2) {
  int step = -1;
  auto c = einsum("2*o<+2*k; k => o", {out_only("x", {11}), out_only("w", {3})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{4}));
  const auto p = projections(step);
  ASSERT_EQ(p.project_rhs[0][0].terms.size(), 2u);
  EXPECT_EQ(p.project_rhs[0][0].terms[0].coeff, 2);
  EXPECT_EQ(p.project_rhs[0][0].terms[1].coeff, 2);
}

TEST_F(ConvConcat, ValidConvIncompatibleStride) {
  expect_error<ShapeError>([] { einsum("2*o<+k; k => o", {out_only("x", {10}), out_only("w", {3})}); },
                           "solved dimensions for axis: incompatible stride");
}

TEST_F(ConvConcat, ValidConvInputFromOutput) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}});
  auto c = op("c", Einsum{"2*o<+k; k => o"}, {x, out_only("w", {3})}, nullptr, {.output = {{4}}});
  finish_inference();
  EXPECT_EQ(out_dims(x), (Dims{9}));
  (void)c;
}

TEST_F(ConvConcat, ValidConvInfersKernel) {
  auto w = leaf("w", {.batch = {{}}, .input = {{}}});
  einsum("o<+k; k => o", {out_only("x", {10}), w});
  auto y = out_only("y", {7});
  auto z = new_shape("z");
  int s = -1;
  (void)s;
  finish_inference();
  (void)y; (void)z;
  // kernel is unknown: the result closes first, then the kernel follows from 10 = (o-1) + k
  EXPECT_EQ(out_dims(w)[0] + row_dims(*w, RowKind::Output).size() - 1, out_dims(w)[0]);
}

TEST_F(ConvConcat, KernelFromInputAndOutput) {
  auto w = leaf("w", {.batch = {{}}, .input = {{}}});
  op("c", Einsum{"o<+k; k => o"}, {out_only("x", {10}), w}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{7}}});
  finish_inference();
  EXPECT_EQ(out_dims(w), (Dims{4}));
}

TEST_F(ConvConcat, CannotInferKernel) {
  auto w = leaf("w", {.batch = {{}}, .input = {{}}});
  expect_error<ShapeError>(
      [&] {
        op("c", Einsum{"o<+2*k; k => o"}, {out_only("x", {10}), w}, nullptr,
           {.batch = {{}}, .input = {{}}, .output = {{7}}});
      },
      "cannot infer kernel dimension");
}

TEST_F(ConvConcat, PaddedConvKeepsSize) {
  int step = -1;
  auto x = out_only("x", {6});
  auto c = einsum("o=+k; k => o", {x, out_only("w", {3})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{6}));
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{1, 1}}));
  const auto p = projections(step);
  EXPECT_EQ(p.project_rhs[0][0].offset, -1);
}

TEST_F(ConvConcat, PaddedConvStride2) {
  auto x = out_only("x", {6});
  auto c = einsum("2*o=+k; k => o", {x, out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{3}));
  // reads 2*o + k - 1 for o < 3, k < 3: from -1 to 5
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{1, 0}}));
}

TEST_F(ConvConcat, PaddedConvDilation2) {
  auto x = out_only("x", {6});
  auto c = einsum("o=+2*k; k => o", {x, out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{6}));
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{2, 2}}));
}

TEST_F(ConvConcat, PaddedConvStride2Dilation2) {
  auto x = out_only("x", {8});
  auto c = einsum("2*o=+2*k; k => o", {x, out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{4}));
  // reads 2*o + 2*k - 2 for o < 4, k < 3: from -2 to 8
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{2, 1}}));
}

TEST_F(ConvConcat, PaddedConvIncompatibleStride) {
  expect_error<ShapeError>([] { einsum("2*o=+k; k => o", {out_only("x", {7}), out_only("w", {3})}); },
                           "incompatible stride");
}

TEST_F(ConvConcat, PaddingIsMaxOverConsumers) {
  auto x = out_only("x", {6});
  einsum("o=+k; k => o", {x, out_only("w", {3})});
  einsum("o=+k; k => o", {x, out_only("v", {5})});
  finish_inference();
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{2, 2}}));
}

TEST_F(ConvConcat, Conv2dShapes) {
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{8, 8, 3}}});
  auto w = leaf("w", {.batch = {{}}, .input = {{3, 3, 3}}, .output = {{4}}});
  auto y = einsum("...|2*h=+kh, w=+kw, c; |kh, kw, c -> f => ...|h, w, f", {x, w});
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{2, 4, 8, 4}));
  EXPECT_EQ(padding(*x), (std::vector<ir::AxisPadding>{{0, 0}, {1, 0}, {1, 1}, {0, 0}}));
}

TEST_F(ConvConcat, StridedSubsample) {
  int step = -1;
  auto c = einsum("2*o => o", {out_only("x", {6})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{3}));
  const auto p = projections(step);
  EXPECT_EQ(p.project_rhs[0][0].terms[0].coeff, 2);
}

TEST_F(ConvConcat, StridedWithOffsetInterleave) {
  int step = -1;
  auto c = einsum("2*o+1 => o", {out_only("x", {6})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{3}));
  EXPECT_EQ(projections(step).project_rhs[0][0].offset, 1);
}

TEST_F(ConvConcat, StridedFromResult) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}});
  op("c", Einsum{"3*o => o"}, {x}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{4}}});
  finish_inference();
  EXPECT_EQ(out_dims(x), (Dims{12}));
}

TEST_F(ConvConcat, MaxPoolShapes) {
  auto x = out_only("x", {6, 6});
  auto window = out_only("window", {2, 2});
  auto c = einsum("2*h<+p, 2*w<+q; p, q => h, w", {x, window});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{3, 3}));
}

TEST_F(ConvConcat, ConcatTwoOperands) {
  int step = -1;
  auto c = einsum("a; b => a^b", {out_only("x", {2}), out_only("y", {3})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5}));
  const auto blocks = block_projections(step);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].live_rhs, (std::vector<bool>{true, false}));
  EXPECT_EQ(blocks[1].live_rhs, (std::vector<bool>{false, true}));
  EXPECT_EQ(blocks[0].projections.product_space, (Dims{2}));
  EXPECT_EQ(blocks[1].projections.product_space, (Dims{3}));
  EXPECT_EQ(blocks[1].projections.project_lhs[0].offset, 2);
  EXPECT_EQ(blocks[1].projections.project_rhs[1][0].offset, 0);
}

TEST_F(ConvConcat, ConcatPrefixExtraction) {
  auto a = leaf("a", {.batch = {{}}, .input = {{}}});
  op("p", Einsum{"a^b => a"}, {out_only("x", {5})}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{2}}});
  (void)a;
  finish_inference();
}

TEST_F(ConvConcat, ConcatSuffixGuessesDiscardablePrefixZero) {
  auto c = einsum("a^b => b", {out_only("x", {5})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5}));
}

TEST_F(ConvConcat, ConcatSuffixExtractionWithKnownPrefix) {
  int step = -1;
  auto c = op("c", Einsum{"a^b => b"}, {out_only("x", {5})}, &step, {.batch = {{}}, .input = {{}}, .output = {{3}}});
  finish_inference();
  const auto blocks = block_projections(step);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].projections.project_rhs[0][0].offset, 2);
  (void)c;
}

TEST_F(ConvConcat, IntegerPartShift) {
  int step = -1;
  auto c = einsum("1^i => i", {out_only("x", {5})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{4}));
  const auto blocks = block_projections(step);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].projections.project_rhs[0][0].offset, 1);
  EXPECT_EQ(blocks[0].projections.product_space, (Dims{4}));
}

TEST_F(ConvConcat, IntegerPartPad) {
  int step = -1;
  auto c = einsum("i => 1^i", {out_only("x", {4})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5}));
  const auto blocks = block_projections(step);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].projections.project_lhs[0].offset, 1);
}

TEST_F(ConvConcat, ConcatAlongInputAxis) {
  auto c = einsum("a->o; b->o => a^b->o", {leaf("x", {.batch = {{}}, .input = {{2}}, .output = {{3}}}),
                                            leaf("y", {.batch = {{}}, .input = {{4}}, .output = {{3}}})});
  finish_inference();
  EXPECT_EQ(row_dims(*c, RowKind::Input), (Dims{6}));
}

TEST_F(ConvConcat, ConcatInReverseDirectionSplits) {
  auto x = out_only("x", {2});
  auto y = out_only("y", {3});
  auto cat = einsum("a; b => a^b", {x, y});
  auto back = op("back", Einsum{"a^b => b"}, {cat}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{3}}});
  finish_inference();
  EXPECT_EQ(out_dims(back), (Dims{3}));
}

TEST_F(ConvConcat, ConcatComponentsExceedSize) {
  expect_error<ShapeError>(
      [] { op("c", Einsum{"a; b => a^b"}, {out_only("x", {4}), out_only("y", {3})}, nullptr, {.output = {{5}}}); },
      "concat: components exceed the concatenated size");
}

TEST_F(ConvConcat, ConcatMismatch) {
  expect_error<ShapeError>(
      [] { op("c", Einsum{"a; b => a^b"}, {out_only("x", {1}), out_only("y", {1})}, nullptr, {.output = {{5}}}); },
      "solved dimensions for axis: mismatch");
}

TEST_F(ConvConcat, StackTwoVectors) {
  auto x = einsum("...|...->... => ...|...->0, ...", {out_only("x", {3})});
  auto y = einsum("...|...->... => ...|...->0, ...", {out_only("y", {3})});
  auto c = einsum("...|...->a, i; ...|...->b, i => ...|...->a^b, i", {x, y});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{2, 3}));
}

// The spec's result total and its parts are all unknown after propagation, only the operand's
// total is given: closing must guess a part (the rest follows), not the result's total (which
// contradicted the operand: "concatenation of size 1 vs 5").
TEST_F(ConvConcat, IdentityOverConcatenatedAxisKeepsItsSize) {
  int step = -1;
  auto c = einsum("a^b=>a^b", {out_only("x", {5})}, &step);
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5}));
  // The blocks copy the operand cell for cell: each writes the cells it reads, one after another
  // (a guessed part of size 1 is a broadcast axis: no loop, a fixed index).
  std::int64_t covered = 0;
  for (const auto& block : block_projections(step)) {
    const auto& p = block.projections;
    EXPECT_EQ(p.project_lhs[0].to_string(), p.project_rhs[0][0].to_string());
    EXPECT_EQ(p.project_lhs[0].offset, covered);
    covered += p.product_space.empty() ? 1 : p.product_space[0];
  }
  EXPECT_EQ(covered, 5);
}

TEST_F(ConvConcat, IdentityOverConcatenatedAxisBesideAPlainAxis) {
  auto c = einsum("a^b,i=>a^b,i", {out_only("x", {5, 2})});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{5, 2}));
}

TEST_F(ConvConcat, ThreeWayMiddle) {
  auto c = op("c", Einsum{"a^b^c => b"}, {out_only("x", {6})}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{6}}});
  finish_inference();
  EXPECT_EQ(out_dims(c), (Dims{6}));
}

}  // namespace
}  // namespace cannl::shape::testing
