// Dimension bases (semantics-frontend.md 1.4-1.6): labels specs that name them, their agreement
// under unification and broadcasting, how derived axes (convolution, concatenation) combine
// them, and printing.

#include "cannl/shape/einsum_spec.h"
#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Bases : public ShapeTest {};

ShapeRef labels_leaf(const std::string& name, const std::string& labels) {
  auto s = new_shape_from_labels(name, labels);
  propagate({name, s, {}, Terminal{}});
  return s;
}

TEST(LabelsSpec, SizesNamedSizesLabelsAndRowVariables) {
  const SlotSpec s = parse_labels_spec("2|rgb=3->..v.., 7");
  ASSERT_EQ(s.batch.dims.size(), 1u);
  EXPECT_EQ(s.batch.dims[0].kind, AxisSpec::Kind::Fixed);
  EXPECT_EQ(s.batch.dims[0].index, 2);
  EXPECT_TRUE(s.batch.dims[0].basis.empty());
  ASSERT_EQ(s.input.dims.size(), 1u);
  EXPECT_EQ(s.input.dims[0].index, 3);
  EXPECT_EQ(s.input.dims[0].basis, "rgb");
  EXPECT_TRUE(s.output.has_ellipsis);
  EXPECT_EQ(s.output.var_name, "v");
  ASSERT_EQ(s.output.dims.size(), 1u);
  EXPECT_EQ(s.output.dims[0].index, 7);
}

TEST(LabelsSpec, RejectsEinsumOnlyAxes) {
  expect_error<EinsumSyntaxError>([] { parse_labels_spec("2*o"); }, "not allowed in a labels spec");
  expect_error<EinsumSyntaxError>([] { parse_labels_spec("a^b"); }, "not allowed in a labels spec");
  expect_error<EinsumSyntaxError>([] { parse_labels_spec("o=+k"); }, "not allowed in a labels spec");
  expect_error<EinsumSyntaxError>([] { parse_labels_spec("i => i"); }, "a labels spec describes one shape");
  expect_error<EinsumSyntaxError>([] { parse_labels_spec("..i.., i"); },
                                  "Name 'i' is used as both a dimension variable and a row variable");
}

TEST_F(Bases, PrintsNamedBasesAndOnlyBases) {
  auto x = new_shape_from_labels("x", "2|rgb=3->7");
  EXPECT_EQ(to_string(*x), "2|rgb=3->7");
  EXPECT_EQ(to_string(*x, PrintStyle::OnlyBases), "default|rgb->default");
  auto one = scalar();
  finish_inference();
  EXPECT_EQ(to_string(*one, PrintStyle::OnlyBases), "bcast_if_1");
}

TEST_F(Bases, OmittedRowsAreInferredAndLabelsAreShared) {
  auto sq = labels_leaf("sq", "i->i");
  EXPECT_TRUE(sq->batch.is_open());  // omitted: inferred
  EXPECT_FALSE(labels_leaf("e", "|i->i")->batch.is_open());  // written empty: no batch axes
  auto v = leaf("v", {.batch = {{}}, .input = {{}}, .output = {{5}}});
  auto r = einsum("|i->j; |->i => |->j", {sq, v});
  finish_inference();
  EXPECT_EQ(to_string(*sq), "5->5");  // the output shares the input's label
  EXPECT_EQ(to_string(*r), "5");
}

TEST_F(Bases, PlaceholderIsNotShared) {
  auto x = labels_leaf("x", "|->_, _");
  auto a = leaf("a", {.batch = {{}}, .input = {{}}, .output = {{2, 3}}});
  auto r = einsum("|->i, j; |->i, j => |->i, j", {x, a});
  finish_inference();
  EXPECT_EQ(to_string(*x), "2,3");
  EXPECT_EQ(to_string(*r), "2,3");
}

TEST_F(Bases, EinsumCarriesTheBasisToTheResult) {
  auto x = labels_leaf("x", "|->rgb=3, 4");
  auto y = einsum("|->c, n => |->n, c", {x});
  finish_inference();
  EXPECT_EQ(to_string(*y), "4,rgb=3");
  EXPECT_EQ(dims(*y), (Dims{4, 3}));
}

TEST_F(Bases, PointwiseBroadcastOfAScalarKeepsTheBasis) {
  auto x = labels_leaf("x", "|->rgb=3");
  auto y = op("add", Pointwise{}, {x, scalar()});
  finish_inference();
  EXPECT_EQ(to_string(*y), "rgb=3");
}

TEST_F(Bases, UnifyingDifferentBasesFails) {
  auto a = labels_leaf("a", "|->rgb=3");
  auto b = labels_leaf("b", "|->3");
  const auto msg = expect_error<ShapeError>([&] { einsum("|->i; |->i => |->i", {a, b}); },
                                            "solved dimensions for axis: different bases");
  EXPECT_NE(msg.find("rgb=3 vs 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[rgb vs default]"), std::string::npos) << msg;
}

TEST_F(Bases, TwoNamedBasesOfEqualSizeDoNotUnify) {
  auto a = labels_leaf("a", "|->h=4");
  auto b = labels_leaf("b", "|->w=4");
  expect_error<ShapeError>([&] { einsum("|->i; |->i => |->i", {a, b}); },
                           "solved dimensions for axis: different bases (h=4 vs w=4)");
}

TEST_F(Bases, BroadcastComparisonOfDifferentBasesFails) {
  auto a = labels_leaf("a", "|->rgb=3");
  auto b = labels_leaf("b", "|->3");
  expect_error<ShapeError>([&] { op("add", Pointwise{}, {a, b}); },
                           "dimension comparison for axis: different bases");
}

TEST_F(Bases, DifferentSizesAreAMismatchNotABasisError) {
  auto a = labels_leaf("a", "|->rgb=3");
  auto b = labels_leaf("b", "|->rgb=4");
  expect_error<ShapeError>([&] { op("add", Pointwise{}, {a, b}); },
                           "dimension comparison for axis: mismatch");
}

TEST_F(Bases, StridedAxisInheritsTheBasisBothWays) {
  auto x = labels_leaf("x", "|->w=6");
  auto down = einsum("|->2*o => |->o", {x});
  auto small = labels_leaf("s", "|->h=3");
  auto up = einsum("|->2*o; |->o => |->2*o", {leaf("u", {.batch = {{}}, .input = {{}}}), small});
  finish_inference();
  EXPECT_EQ(to_string(*down), "w=3");
  EXPECT_EQ(to_string(*up), "h=6");
}

TEST_F(Bases, ConvolutionNamedBasisWinsOverDefaultKernel) {
  auto x = labels_leaf("x", "|->h=8");
  auto k = labels_leaf("k", "|->3");
  auto y = einsum("|->o<+k; |->k => |->o", {x, k});
  auto p = einsum("|->o=+k; |->k => |->o", {x, k});
  finish_inference();
  EXPECT_EQ(to_string(*y), "h=6");
  EXPECT_EQ(to_string(*p), "h=8");
}

TEST_F(Bases, ConvolutionConflictingBasesBetweenStrideAndKernel) {
  auto x = leaf("x", {.batch = {{}}, .input = {{}}});
  auto k = labels_leaf("k", "|->w=3");
  auto r = new_shape_from_labels("r", "|->h=4");
  expect_error<ShapeError>([&] { propagate({"conv", r, {x, k}, Einsum{"|->o<+k; |->k => |->o"}}); },
                           "convolution: conflicting dimension bases between stride and kernel (h=4 vs kernel w=3)");
}

TEST_F(Bases, ConcatenationCombinesBases) {
  auto a = labels_leaf("a", "|->t=2");
  auto b = labels_leaf("b", "|->3");
  auto c = einsum("|->a; |->b => |->a^b", {a, b});
  finish_inference();
  EXPECT_EQ(to_string(*c), "t=5");
}

TEST_F(Bases, ConcatenationConflictingBases) {
  auto a = labels_leaf("a", "|->t=2");
  auto b = labels_leaf("b", "|->u=3");
  expect_error<ShapeError>([&] { einsum("|->a; |->b => |->a^b", {a, b}); },
                           "concat: conflicting dimension bases (t vs u)");
}

TEST_F(Bases, ConcatenationSplitGivesTheRestTheTotalsBasis) {
  auto x = labels_leaf("x", "|->t=5");
  auto head = labels_leaf("h", "|->2");
  auto tail = einsum("|->a^b; |->a => |->b", {x, head});
  finish_inference();
  EXPECT_EQ(to_string(*tail), "t=3");
}

}  // namespace
}  // namespace cannl::shape::testing
