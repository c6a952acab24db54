// Every documented error (semantics-frontend.md 3.8) reachable through the extended notation:
// its type and message, the caret under the offending axis, and the other operations that
// constrain the conflicting shapes (up to max_shape_error_origins).

#include "cannl/support/config.h"
#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class NotationErrors : public ShapeTest {
 protected:
  void TearDown() override {
    config::clear_overrides();
    ShapeTest::TearDown();
  }
};

ShapeRef vec(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST_F(NotationErrors, NumberOfAxesMismatch) {
  expect_error<ShapeError>([] { einsum("ij...k => k", {vec("x", {2, 3})}); }, "Number of axes mismatch");
}

TEST_F(NotationErrors, TooManyAxesInOperand) {
  expect_error<ShapeError>(
      [] { op("r", Pointwise{}, {vec("x", {2, 3})}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{3}}}); },
      "Too many axes in an operand");
}

TEST_F(NotationErrors, IncompatibleStrideHasCaret) {
  const auto msg = expect_error<ShapeError>(
      [] { einsum("2*o => o", {vec("x", {5})}); }, "solved dimensions for axis: incompatible stride");
  EXPECT_NE(msg.find("  2*o => o\n  ^"), std::string::npos) << msg;
}

TEST_F(NotationErrors, ConvMismatchAgainstGivenResult) {
  expect_error<ShapeError>(
      [] {
        op("r", Einsum{"o<+k; k => o"}, {vec("x", {10}), vec("w", {3})}, nullptr,
           {.batch = {{}}, .input = {{}}, .output = {{5}}});
      },
      "solved dimensions for axis: mismatch");
}

TEST_F(NotationErrors, ConcatExceedsHasCaret) {
  const auto msg = expect_error<ShapeError>(
      [] { op("r", Einsum{"a^b => a"}, {vec("x", {2})}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{3}}}); },
      "concat: components exceed the concatenated size");
  EXPECT_NE(msg.find("  a^b => a\n  ^"), std::string::npos) << msg;
}

TEST_F(NotationErrors, IntegerPartLargerThanAxis) {
  expect_error<ShapeError>([] { einsum("3^i => i", {vec("x", {2})}); }, "concat: components exceed");
}

TEST_F(NotationErrors, FixedIndexBeyondSize) {
  expect_error<ShapeError>([] { einsum("i5 => i", {vec("x", {2, 3})}); }, "At_least_dim constraint failed");
}

TEST_F(NotationErrors, WrongOperandCount) {
  expect_error<EinsumSyntaxError>([] { einsum("i; j; k => ijk", {vec("x", {2})}); }, "expected 3 operands");
}

TEST_F(NotationErrors, ListsOtherOperationsOnTheShape) {
  auto x = new_shape("x");
  op("first", Einsum{"ij => ij"}, {vec("a", {2, 3})}, nullptr);
  auto y = op("uses_x", Einsum{"ij;jk => ik"}, {x, vec("b", {3, 4})});
  (void)y;
  const auto msg = expect_error<ShapeError>(
      [&] { op("conflict", Einsum{"ij => ij"}, {x}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{2, 5}}}); },
      "solved dimensions for axis: mismatch");
  EXPECT_NE(msg.find("other operations constraining these shapes:\n  'uses_x' (ij;jk => ik)"), std::string::npos)
      << msg;
}

TEST_F(NotationErrors, OriginsCappedByConfig) {
  config::set_override("max_shape_error_origins", "1");
  auto x = new_shape("x");
  op("one", Einsum{"ij => ij"}, {x});
  op("two", Einsum{"ij;jk => ik"}, {x, vec("b", {3, 4})});
  op("three", Einsum{"ij => ji"}, {x});
  const auto msg = expect_error<ShapeError>(
      [&] { op("bad", Einsum{"ij => ij"}, {x}, nullptr, {.batch = {{}}, .input = {{}}, .output = {{2, 5}}}); },
      "and 2 more");
  EXPECT_NE(msg.find("'three'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'one'"), std::string::npos) << msg;
}

TEST_F(NotationErrors, FailedStepLeavesStateUsable) {
  auto x = vec("x", {5});
  expect_error<ShapeError>([&] { einsum("2*o<+k; k => o", {x, vec("w", {2})}); }, "incompatible stride");
  auto ok = einsum("2*o<+k; k => o", {x, vec("v", {3})});
  finish_inference();
  EXPECT_EQ(row_dims(*ok, RowKind::Output), (Dims{2}));
}

}  // namespace
}  // namespace cannl::shape::testing
