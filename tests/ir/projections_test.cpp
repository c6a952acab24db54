// Surjectivity / injectivity of LHS maps (src/ir/projections.cpp).
#include <gtest/gtest.h>

#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::fx;
using testing::it;

TEST(Projections, PointwiseIsBijective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3, 4}, s);
  p.lhs_dims = {3, 4};
  p.project_lhs = {it(s[0]), it(s[1])};
  EXPECT_TRUE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, TransposedLhsIsBijective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3, 4}, s);
  p.lhs_dims = {4, 3};
  p.project_lhs = {it(s[1]), it(s[0])};
  EXPECT_TRUE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, ReductionIsSurjectiveNotInjective) {
  std::vector<Symbol> s;  // c[i, k] = a[i, j] * b[j, k]
  auto p = testing::projections({2, 4, 3}, s);
  p.lhs_dims = {2, 4};
  p.project_lhs = {it(s[0]), it(s[1])};
  EXPECT_TRUE(p.is_surjective());
  EXPECT_FALSE(p.is_injective());
}

TEST(Projections, FixedIndexOnLhsIsNotSurjective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3}, s);
  p.lhs_dims = {3, 2};
  p.project_lhs = {it(s[0]), fx(1)};
  EXPECT_FALSE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, SizeOneAxisFixedZeroOrExtentOneIteratorIsCovered) {
  std::vector<Symbol> s;
  auto p = testing::projections({3, 1}, s);
  p.lhs_dims = {3, 1};
  p.project_lhs = {it(s[0]), fx(0)};
  EXPECT_TRUE(p.is_surjective());
  p.project_lhs = {it(s[0]), it(s[1])};
  EXPECT_TRUE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());  // the extent-1 iterator never varies
}

TEST(Projections, ExtentDifferentFromAxisSizeIsNotSurjective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3}, s);
  p.lhs_dims = {4};
  p.project_lhs = {it(s[0])};
  EXPECT_FALSE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, AnEmptyProductAxisWritesNoCell) {
  std::vector<Symbol> s;  // t[i] = sum over k < 0 of x[i, k]
  auto p = testing::projections({3, 0}, s);
  p.lhs_dims = {3};
  p.project_lhs = {it(s[0])};
  EXPECT_FALSE(p.is_surjective());
  p.lhs_dims = {0};  // an LHS without cells is covered by no iteration
  p.project_lhs = {it(s[1])};
  EXPECT_TRUE(p.is_surjective());
}

TEST(Projections, DiagonalIsInjectiveNotSurjective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3}, s);
  p.lhs_dims = {3, 3};
  p.project_lhs = {it(s[0]), it(s[0])};
  EXPECT_FALSE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, AffineMixedRadix) {
  std::vector<Symbol> s;  // lhs[2*o + k]
  auto p = testing::projections({4, 2}, s);
  p.lhs_dims = {8};
  p.project_lhs = {AxisIndex{{{2, s[0]}, {1, s[1]}}, 0}};
  EXPECT_TRUE(p.is_injective());
  EXPECT_FALSE(p.is_surjective());  // conservative: not a bare iterator
  p.product_space = {4, 3};         // k in [0, 3) overlaps the next o
  EXPECT_FALSE(p.is_injective());
}

TEST(Projections, NegativeCoefficientsUseMagnitude) {
  std::vector<Symbol> s;
  auto p = testing::projections({4}, s);
  p.lhs_dims = {4};
  p.project_lhs = {AxisIndex{{{-1, s[0]}}, 3}};  // reversal
  EXPECT_TRUE(p.is_injective());
  EXPECT_FALSE(p.is_surjective());
}

TEST(Projections, PinningAcrossPositions) {
  std::vector<Symbol> s;  // lhs[i, i + j]: i pinned by axis 0, then j by axis 1
  auto p = testing::projections({3, 3}, s);
  p.lhs_dims = {3, 5};
  p.project_lhs = {it(s[0]), AxisIndex{{{1, s[0]}, {1, s[1]}}, 0}};
  EXPECT_TRUE(p.is_injective());
  p.project_lhs = {AxisIndex{{{1, s[0]}, {1, s[1]}}, 0}};
  p.lhs_dims = {5};
  EXPECT_FALSE(p.is_injective());
}

TEST(Projections, StaticSymbolOnLhsIsNotSurjective) {
  std::vector<Symbol> s;
  auto p = testing::projections({3}, s);
  const Symbol batch = fresh_symbol();
  p.lhs_dims = {4, 3};
  p.project_lhs = {it(batch), it(s[0])};
  EXPECT_FALSE(p.is_surjective());
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, ScalarLhs) {
  std::vector<Symbol> s;
  auto p = testing::projections({5}, s);
  p.lhs_dims = {};
  EXPECT_TRUE(p.is_surjective());
  EXPECT_FALSE(p.is_injective());  // a sum into one cell
  p.product_space = {};
  p.product_iterators = {};
  EXPECT_TRUE(p.is_injective());
}

TEST(Projections, MalformedIsNeither) {
  std::vector<Symbol> s;
  auto p = testing::projections({3}, s);
  p.lhs_dims = {3, 1};
  p.project_lhs = {it(s[0])};
  EXPECT_FALSE(p.is_surjective());
  EXPECT_FALSE(p.is_injective());
}

}  // namespace
}  // namespace cannl::ir
