// Lowering semantics checked numerically end to end: neutral initialization, accumulation onto
// uploaded values, max reductions, fixed indices, padding margins and broadcast operands. Every
// scenario runs on the interpreter and on the C backend, against hand-computed values and
// against each other.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using runtime::Context;

/// Runs `scenario` on both backends; each returns the values of its result node.
void expect_on_both_backends(const std::function<std::vector<double>(Context)>& scenario,
                             const std::vector<double>& expected) {
  const auto interp = scenario(Context::interpreter());
  const auto cc = scenario(Context::cpu());
  EXPECT_EQ(interp, expected) << "interpreter";
  EXPECT_EQ(cc, expected) << "C backend";
  EXPECT_EQ(interp, cc) << "backends disagree";
}

/// lhs[i, j] (sum or max)= over k of: x[i, k]  — a row reduction of x [rows, cols].
ir::Projections row_reduction(std::int64_t rows, std::int64_t cols) {
  const ir::Symbol i = ir::fresh_symbol(), k = ir::fresh_symbol();
  ir::Projections p;
  p.product_space = {rows, cols};
  p.product_iterators = {i, k};
  p.lhs_dims = {rows};
  p.rhs_dims = {{rows, cols}};
  p.project_lhs = {AxisIndex::iterator(i)};
  p.project_rhs = {{AxisIndex::iterator(i), AxisIndex::iterator(k)}};
  return p;
}

const std::vector<double> kA = {1, 2, 3, 4, 5, 6};        // [2, 3]
const std::vector<double> kB = {1, -1, 0, 2, 3, 0.5};     // [3, 2]
const std::vector<double> kAB = {10, 4.5, 22, 9};       // a.b, [2, 2]

TEST(LoweringNumericTest, MatmulWithNeutralInitialization) {
  expect_on_both_backends([](Context ctx) {
    auto a = ir::make_node("a", DType::F32, {2, 3});
    auto b = ir::make_node("b", DType::F32, {3, 2});
    auto c = ir::make_node("c", DType::F32, {2, 2});
    auto r = ctx.compile(single_accum(accum_op(c, Op::Add, Op::Mul, {of(a), of(b)},
                                               matmul_projections(2, 3, 2), /*init=*/true)),
                         "matmul");
    EXPECT_EQ(r.inputs().size(), 2u) << "c is fully initialized by the routine";
    ctx.set_values(a, kA);
    ctx.set_values(b, kB);
    ctx.run(r);
    ctx.run(r);  // running twice must not accumulate: the init resets c
    return ctx.get_values(c);
  }, kAB);
}

TEST(LoweringNumericTest, AccumulationWithoutInitializationAddsOntoUploadedValues) {
  expect_on_both_backends([](Context ctx) {
    auto a = ir::make_node("a", DType::F32, {2, 3});
    auto b = ir::make_node("b", DType::F32, {3, 2});
    auto c = ir::make_node("c", DType::F32, {2, 2});
    auto r = ctx.compile(single_accum(accum_op(c, Op::Add, Op::Mul, {of(a), of(b)},
                                               matmul_projections(2, 3, 2))),
                         "matmul_accumulate");
    ctx.set_values(a, kA);
    ctx.set_values(b, kB);
    EXPECT_THROW(ctx.run(r), UninitializedError) << "c is read before written";
    ctx.set_values(c, std::vector<double>{100, 200, 300, 400});
    ctx.run(r);
    ctx.run(r);
    return ctx.get_values(c);
  }, {120, 209, 344, 418});
}

TEST(LoweringNumericTest, MaxReductionStartsFromMinusInfinity) {
  expect_on_both_backends([](Context ctx) {
    auto x = ir::make_node("x", DType::F32, {2, 3});
    auto m = ir::make_node("m", DType::F32, {2});
    auto r = ctx.compile(single_accum(accum_op(m, Op::Max, Op::Identity, {of(x)},
                                               row_reduction(2, 3), /*init=*/true)),
                         "row_max");
    ctx.set_values(x, std::vector<double>{-5, -2, -9, -1.5, -8, -7});
    ctx.run(r);
    return ctx.get_values(m);
  }, {-2, -1.5});
}

TEST(LoweringNumericTest, FixedLhsIndexInitializesTheRestOfTheNode) {
  expect_on_both_backends([](Context ctx) {
    auto x = ir::make_node("x", DType::F32, {3});
    auto y = ir::make_node("y", DType::F32, {2, 3});
    auto p = pointwise_projections({3}, 1);
    p.lhs_dims = {2, 3};
    p.project_lhs.insert(p.project_lhs.begin(), AxisIndex::fixed(1));  // y[1, j] only
    EXPECT_FALSE(p.is_surjective());
    auto r = ctx.compile(single_accum(accum_op(y, Op::Add, Op::Identity, {of(x)}, p, true)),
                         "second_row");
    EXPECT_TRUE(r.inputs().size() == 1 && r.inputs()[0] == x);
    ctx.set_values(x, std::vector<double>{4, 5, 6});
    ctx.run(r);
    return ctx.get_values(y);
  }, {0, 0, 0, 4, 5, 6});
}

TEST(LoweringNumericTest, FixedRhsIndexSelectsARow) {
  expect_on_both_backends([](Context ctx) {
    auto x = ir::make_node("x", DType::F32, {4, 3});
    auto row = ir::make_node("row", DType::F32, {3});
    auto p = pointwise_projections({3}, 1);
    p.rhs_dims = {{4, 3}};
    p.project_rhs[0].insert(p.project_rhs[0].begin(), AxisIndex::fixed(2));
    auto r = ctx.compile(single_accum(accum_op(row, Op::Arg2, Op::Identity, {of(x)}, p)),
                         "take_row_2");
    ctx.set_values(x, std::vector<double>{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
    ctx.run(r);
    return ctx.get_values(row);
  }, {20, 21, 22});
}

/// out[i] accum= p[i + k - 1] for i < 2, k < 3: a width-3 window over p's two logical cells, so
/// the window reads p's left and right margins.
ir::Projections window_over_padded(const ir::NodeRef& p) {
  const ir::Symbol i = ir::fresh_symbol(), k = ir::fresh_symbol();
  ir::Projections proj;
  proj.product_space = {2, 3};
  proj.product_iterators = {i, k};
  proj.lhs_dims = {2};
  proj.rhs_dims = {p->logical_dims()};
  proj.project_lhs = {AxisIndex::iterator(i)};
  proj.project_rhs = {{AxisIndex{{{1, i}, {1, k}}, -1}}};
  return proj;
}

TEST(LoweringNumericTest, PaddingMarginsAreResetToEachConsumersNeutral) {
  // Margins start as zeros: a max over them would give 0 without the reset to -inf, and the sum
  // that follows would give -inf if the margins kept -inf instead of being reset to 0.
  expect_on_both_backends([](Context ctx) {
    auto p = ir::make_node("p", DType::F32, {4});
    p->padding = {{1, 1}};
    auto m = ir::make_node("window_max", DType::F32, {2});
    auto s = ir::make_node("window_sum", DType::F32, {2});
    auto r = ctx.compile(
        accum_sequence({accum_op(m, Op::Max, Op::Identity, {of(p)}, window_over_padded(p), true),
                        accum_op(s, Op::Add, Op::Identity, {of(p)}, window_over_padded(p), true)}),
        "windows");
    ctx.set_values(p, std::vector<double>{-5, -7});
    ctx.run(r);
    EXPECT_EQ(ctx.get_values(p), (std::vector<double>{-5, -7})) << "interior left intact";
    auto result = ctx.get_values(m);
    for (double v : ctx.get_values(s)) result.push_back(v);
    return result;
  }, {-5, -5, -12, -12});
}

TEST(LoweringNumericTest, ReductionOverABroadcastOperand) {
  // t[i] = sum_k (x[i, k] + w[i]): w is read at fewer axes than the product space [i, k].
  expect_on_both_backends([](Context ctx) {
    auto x = ir::make_node("x", DType::F32, {2, 3});
    auto w = ir::make_node("w", DType::F32, {2});
    auto t = ir::make_node("t", DType::F32, {2});
    auto p = row_reduction(2, 3);
    p.rhs_dims.push_back({2});
    p.project_rhs.push_back({AxisIndex::iterator(p.product_iterators[0])});
    auto r = ctx.compile(single_accum(accum_op(t, Op::Add, Op::Add, {of(x), of(w)}, p, true)),
                         "broadcast_sum");
    ctx.set_values(x, kA);
    ctx.set_values(w, std::vector<double>{10, -1});
    ctx.run(r);
    return ctx.get_values(t);
  }, {36, 12});
}

TEST(LoweringNumericTest, ReductionOverAnEmptyAxisGivesTheNeutralElement) {
  // t[i] accum= over k < 0 of x[i, k]: no iteration runs, so every cell keeps the neutral fill
  // (an empty sum is 0, an empty product 1, an empty max -inf, an empty min +inf).
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<Op, double>> cases = {
      {Op::Add, 0}, {Op::Mul, 1}, {Op::Max, -inf}, {Op::Min, inf}};
  for (const auto& [op, neutral] : cases) {
    const Op accum = op;  // a lambda cannot capture a structured binding in Clang 14
    expect_on_both_backends([accum](Context ctx) {
      auto x = ir::make_node("x", DType::F32, {2, 0});
      auto t = ir::make_node("t", DType::F32, {2});
      auto r = ctx.compile(single_accum(accum_op(t, accum, Op::Identity, {of(x)},
                                                 row_reduction(2, 0), /*init=*/true)),
                           "empty_reduction");
      ctx.set_values(x, std::vector<double>{});
      ctx.set_values(t, std::vector<double>{7, 7});  // stale values the reset must replace
      ctx.run(r);
      return ctx.get_values(t);
    }, {neutral, neutral});
  }
}

TEST(LoweringNumericTest, ResetSubtractionAndDivisionStartFromTheirNeutral) {
  // t =:- x is t = 0 - x and t =:/ x is t = 1 / x, whether the projection sums several
  // iterations into a cell or writes each cell once (the plain store gave x itself).
  for (const auto& [op, expected] :
       std::vector<std::pair<Op, std::vector<double>>>{{Op::Sub, {-4, 2}}, {Op::Div, {0.25, -0.5}}}) {
    const Op accum = op;  // a lambda cannot capture a structured binding in Clang 14
    expect_on_both_backends([accum](Context ctx) {
      auto x = ir::make_node("x", DType::F32, {2});
      auto t = ir::make_node("t", DType::F32, {2});
      auto r = ctx.compile(single_accum(accum_op(t, accum, Op::Identity, {of(x)},
                                                 pointwise_projections({2}, 1), /*init=*/true)),
                           "reset_pointwise");
      ctx.set_values(x, std::vector<double>{4, -2});
      ctx.run(r);
      return ctx.get_values(t);
    }, expected);
  }
}

}  // namespace
}  // namespace cannl::testing
