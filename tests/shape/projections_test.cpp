// Projections (semantics-frontend.md 4.2): product spaces, iterators, broadcasting pins, fixed
// indices, batch slices.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Projection : public ShapeTest {};

using ir::AxisIndex;

ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST_F(Projection, EinsumMatmul) {
  int step = -1;
  auto c = einsum("ij;jk=>ik", {out_only("a", {2, 3}), out_only("b", {3, 4})}, &step);
  finish_inference();
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{2, 4, 3}));
  ASSERT_EQ(p.product_iterators.size(), 3u);
  const auto i = AxisIndex::iterator(p.product_iterators[0]);
  const auto k = AxisIndex::iterator(p.product_iterators[1]);
  const auto j = AxisIndex::iterator(p.product_iterators[2]);
  EXPECT_EQ(p.project_lhs, (std::vector<AxisIndex>{i, k}));
  ASSERT_EQ(p.project_rhs.size(), 2u);
  EXPECT_EQ(p.project_rhs[0], (std::vector<AxisIndex>{i, j}));
  EXPECT_EQ(p.project_rhs[1], (std::vector<AxisIndex>{j, k}));
  EXPECT_EQ(p.lhs_dims, (Dims{2, 4}));
  EXPECT_EQ(p.rhs_dims[1], (Dims{3, 4}));
  EXPECT_EQ(p.debug, "ij;jk=>ik");
}

TEST_F(Projection, AnEmptyAxisKeepsALoopOfNoIteration) {
  // A fixed index 0 for the size-0 axis would read x[i, 0], a cell x lacks.
  int step = -1;
  einsum("ij=>i", {out_only("x", {2, 0})}, &step);
  finish_inference();
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{2, 0}));
  ASSERT_EQ(p.product_iterators.size(), 2u);
  const auto i = AxisIndex::iterator(p.product_iterators[0]);
  const auto j = AxisIndex::iterator(p.product_iterators[1]);
  EXPECT_EQ(p.project_lhs, (std::vector<AxisIndex>{i}));
  EXPECT_EQ(p.project_rhs[0], (std::vector<AxisIndex>{i, j}));
}

TEST_F(Projection, ComposeMatmulMemoryOrder) {
  int step = -1;
  auto w = leaf("w", {.batch = {{}}, .input = {{3}}, .output = {{4}}});
  auto x = leaf("x", {.batch = {{8}}, .input = {{}}, .output = {{3}}});
  op("y", Compose{}, {w, x}, &step);
  finish_inference();
  const auto p = projections(step);
  // LHS y: batch 8, output 4; then the contracted axis 3 first seen on w's input.
  EXPECT_EQ(p.product_space, (Dims{8, 4, 3}));
  const auto b = AxisIndex::iterator(p.product_iterators[0]);
  const auto o = AxisIndex::iterator(p.product_iterators[1]);
  const auto c = AxisIndex::iterator(p.product_iterators[2]);
  EXPECT_EQ(p.project_lhs, (std::vector<AxisIndex>{b, o}));
  EXPECT_EQ(p.project_rhs[0], (std::vector<AxisIndex>{o, c}));  // w: output @ input
  EXPECT_EQ(p.project_rhs[1], (std::vector<AxisIndex>{b, c}));
}

TEST_F(Projection, PointwiseBroadcastPinsSizeOneAxis) {
  int step = -1;
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{2, 3}}});
  auto k = scalar();
  op("c", Pointwise{}, {a, k}, &step);
  finish_inference();
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{2, 3}));
  EXPECT_EQ(p.project_rhs[1], (std::vector<AxisIndex>{AxisIndex::fixed(0)}));
  EXPECT_EQ(p.project_rhs[0], p.project_lhs);
}

TEST_F(Projection, PointwiseFewerAxesAlignsFromTheRight) {
  int step = -1;
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{2, 3}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{}}, .output = {{3}}});
  op("c", Pointwise{}, {a, b}, &step);
  finish_inference();
  const auto p = projections(step);
  ASSERT_EQ(p.project_lhs.size(), 2u);
  EXPECT_EQ(p.project_rhs[1], (std::vector<AxisIndex>{p.project_lhs[1]}));
}

TEST_F(Projection, TransposeSwapsAxes) {
  int step = -1;
  auto a = leaf("a", {.batch = {{}}, .input = {{3}}, .output = {{2}}});
  auto t = op("t", Transpose{}, {a}, &step);
  finish_inference();
  EXPECT_EQ(to_string(*t), "2->3");
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{3, 2}));
  ASSERT_EQ(p.project_rhs[0].size(), 2u);
  EXPECT_EQ(p.project_rhs[0][0], p.project_lhs[1]);
  EXPECT_EQ(p.project_rhs[0][1], p.project_lhs[0]);
}

TEST_F(Projection, SumReductionIteratorAbsentFromLhs) {
  int step = -1;
  auto x = leaf("x", {.batch = {{2}}, .input = {{}}, .output = {{5}}});
  einsum("...|...->... => |->0", {x}, &step);
  finish_inference();
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{2, 5}));
  EXPECT_EQ(p.project_lhs, (std::vector<AxisIndex>{AxisIndex::fixed(0)}));
  for (auto s : p.product_iterators)
    for (const auto& at : p.project_lhs) EXPECT_FALSE(at.mentions(s));
}

TEST_F(Projection, FixedIndexOnOperand) {
  int step = -1;
  auto x = out_only("x", {4, 3});
  auto y = einsum("2j=>j", {x}, &step);
  finish_inference();
  EXPECT_EQ(dims(*y), (Dims{3}));
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{3}));
  EXPECT_EQ(p.project_rhs[0][0], AxisIndex::fixed(2));
  EXPECT_EQ(p.project_rhs[0][1], p.project_lhs[0]);
}

TEST_F(Projection, SizeOneAxesGetNoLoop) {
  int step = -1;
  auto x = out_only("x", {1, 3});
  einsum("ij=>ji", {x}, &step);
  finish_inference();
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{3}));
  EXPECT_EQ(p.project_lhs[1], AxisIndex::fixed(0));
}

TEST_F(Projection, BatchSliceUsesStaticSymbol) {
  int step = -1;
  ir::StaticSymbol idx{ir::fresh_symbol(), 5, "batch"};
  auto x = leaf("x", {.batch = {{5, 2}}, .input = {{}}, .output = {{3}}});
  auto y = op("slice", BatchSlice{idx}, {x}, &step);
  finish_inference();
  EXPECT_EQ(to_string(*y), "2|3");
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{2, 3}));
  EXPECT_EQ(p.project_rhs[0][0], AxisIndex::iterator(idx.symbol));
  EXPECT_EQ(p.project_rhs[0][1], p.project_lhs[0]);
}

TEST_F(Projection, EinsumTriviaRowVariableInTheMiddle) {
  int step = -1;
  auto a = leaf("a", {.batch = {{}}, .input = {{2}}, .output = {{2}}});
  auto b = leaf("b", {.batch = {{}}, .input = {{2, 3, 4}}, .output = {{2}}});
  auto r = einsum("i->1; ij...->0 => ...->ji", {a, b}, &step);
  finish_inference();
  EXPECT_EQ(to_string(*r), "4->3,2");
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{3, 2, 4}));
  EXPECT_EQ(p.project_rhs[0][0], AxisIndex::fixed(1));  // a's output at fixed index 1
  EXPECT_EQ(p.project_rhs[1][0], AxisIndex::fixed(0));
}

TEST_F(Projection, DiagonalExtraction) {
  int step = -1;
  auto x = out_only("x", {3, 3});
  auto d = einsum("ii=>i", {x}, &step);
  finish_inference();
  EXPECT_EQ(dims(*d), (Dims{3}));
  const auto p = projections(step);
  EXPECT_EQ(p.product_space, (Dims{3}));
  EXPECT_EQ(p.project_rhs[0][0], p.project_rhs[0][1]);
}

}  // namespace
}  // namespace cannl::shape::testing
