// Sizes past the int64 range: every one is a ShapeError naming the operation (and its spec) and
// what overflowed, never a wrapped (even negative) size printed as a result.

#include "cannl/support/checked.h"
#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class SizeOverflow : public ShapeTest {};

constexpr std::int64_t k2to62 = std::int64_t{1} << 62;
constexpr std::int64_t kMax = INT64_MAX;

ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST(CheckedArithmetic, DetectsEveryOverflow) {
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_sub(INT64_MIN, 1), std::nullopt);
  EXPECT_EQ(checked_mul(k2to62, 2), std::nullopt);
  EXPECT_EQ(checked_mul(k2to62, -2), INT64_MIN);
  EXPECT_EQ(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 32), std::nullopt);
  EXPECT_EQ(checked_product({2, 3, 4}), 24);
  EXPECT_EQ(checked_product({}), 1);
  EXPECT_EQ(checked_product({1 << 30, 1 << 30, 1 << 30}), std::nullopt);
  EXPECT_EQ(checked_product({1 << 30, 1 << 30, 1 << 30, 0}), 0) << "a zero axis: no elements";
  EXPECT_EQ(checked_mul_add(k2to62, 1, k2to62), std::nullopt);
  EXPECT_EQ(checked_mul_add(3, 4, 5), 17);
}

TEST_F(SizeOverflow, ConcatenationOfHugeParts) {
  const auto msg = expect_error<ShapeError>(
      [] { einsum("a; b => a^b", {out_only("x", {kMax}), out_only("y", {2})}); }, "size overflow");
  EXPECT_NE(msg.find("a; b => a^b"), std::string::npos) << msg;
  EXPECT_NE(msg.find("concat"), std::string::npos) << msg;
}

TEST_F(SizeOverflow, StridedOutputTimesStride) {
  // in = 4 * o with o = 2^62: the input would be 2^64.
  const auto msg = expect_error<ShapeError>(
      [] { op("c", Einsum{"4*o => o"}, {out_only("x", {8})}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{k2to62}}}); },
      "size overflow");
  EXPECT_NE(msg.find("stride 4 x output size 4611686018427387904"), std::string::npos) << msg;
}

TEST_F(SizeOverflow, ConvolutionSpanAndInput) {
  // Dilation 4 on a kernel of 2^62: the span alone is past 2^63.
  const auto msg = expect_error<ShapeError>([] {
    einsum("o<+4*k; k => o", {out_only("x", {10}), out_only("w", {k2to62})});
  }, "size overflow");
  EXPECT_NE(msg.find("kernel size 4611686018427387904 x dilation 4"), std::string::npos) << msg;
  // Output 2^62 with stride 3: the input 3 * (2^62 - 1) + span overflows.
  expect_error<ShapeError>([] {
    op("c", Einsum{"3*o<+k; k => o"}, {out_only("x", {10}), out_only("w", {3})}, nullptr,
       {.batch = {{}}, .input = {{}}, .output = {{k2to62}}});
  }, "size overflow");
}

TEST_F(SizeOverflow, ElementCountOfAResult) {
  // Each axis fits, their product does not: the result 2^40 x 2^40 of an outer product.
  const std::int64_t big = std::int64_t{1} << 40;
  std::string msg = expect_error<ShapeError>([&] {
    einsum("i; j => i, j", {out_only("x", {big}), out_only("y", {big})});
    finish_inference();
  }, "size overflow");
  EXPECT_NE(msg.find("i; j => i, j"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1099511627776 x 1099511627776"), std::string::npos) << msg;
}

TEST_F(SizeOverflow, ProductSpaceOfAContraction) {
  // The result and operands fit (2^31 x 2^31 elements each) but the loop nest 2^31^3 does not.
  const std::int64_t big = std::int64_t{1} << 31;
  expect_error<ShapeError>([&] {
    einsum("i, j; j, k => i, k", {out_only("a", {big, big}), out_only("b", {big, big})});
    finish_inference();
  }, "product space");
}

TEST_F(SizeOverflow, TotalElementsOfKnownAxes) {
  expect_error<ShapeError>([] {
    leaf("x", {.batch = {{}}, .input = {{}}, .output = {{k2to62, 4, 1}}},
         Terminal{.total_elems = 8});
  }, "size overflow");
}

TEST_F(SizeOverflow, SpecIntegerPastInt64IsASyntaxError) {
  expect_error<EinsumSyntaxError>([] {
    einsum("99999999999999999999*o => o", {out_only("x", {2})});
  }, "too large");
}

TEST_F(SizeOverflow, HugeButRepresentableSizesStillSolve) {
  // 2^62 x 1 elements and a stride whose product is exactly representable.
  auto c = einsum("2*o<+k; k => o", {out_only("x", {k2to62 + 1}), out_only("w", {3})});
  finish_inference();
  EXPECT_EQ(row_dims(*c, RowKind::Output), (Dims{(k2to62 + 1 - 3) / 2 + 1}));
}

}  // namespace
}  // namespace cannl::shape::testing
