// The documented shape errors (semantics-frontend.md 3.8) not covered by errors_test.cpp:
// unresolvable strides, dereferencing past the use site, padding beyond what a compiled shape
// was laid out with.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class DocumentedErrors : public ShapeTest {};

ShapeRef open_output(const std::string& name) { return leaf(name, {.batch = {{}}, .input = {{}}}); }
ShapeRef out_only(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}

TEST_F(DocumentedErrors, UnresolvableStrides) {
  auto x = open_output("x");
  einsum("|->2*a => |->a", {x});
  const auto msg = expect_error<ShapeError>([&] { einsum("|->3*b => |->b", {x}); },
                                            "solved dimensions for axis: unresolvable strides");
  EXPECT_NE(msg.find("neither stride divides the other"), std::string::npos) << msg;
  EXPECT_NE(msg.find("  |->3*b => |->b\n     ^"), std::string::npos) << msg;
}

TEST_F(DocumentedErrors, DividingStridesRelateTheOutputs) {
  auto x = open_output("x");
  auto half = einsum("|->2*a => |->a", {x});
  auto quarter = einsum("|->4*b => |->b", {x});
  auto r = einsum("|->i; |->i => |->i", {quarter, out_only("z", {3})});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{12}));
  EXPECT_EQ(dims(*half), (Dims{6}));
  EXPECT_EQ(dims(*r), (Dims{3}));
}

TEST_F(DocumentedErrors, DividingStridesInTheOtherOrder) {
  auto x = open_output("x");
  auto quarter = einsum("|->4*b => |->b", {x});
  auto half = einsum("|->2*a => |->a", {x});
  einsum("|->i; |->i => |->i", {half, out_only("z", {6})});
  finish_inference();
  EXPECT_EQ(dims(*x), (Dims{12}));
  EXPECT_EQ(dims(*quarter), (Dims{3}));
}

TEST_F(DocumentedErrors, EqualStridesShareTheOutput) {
  auto x = open_output("x");
  auto a = einsum("|->2*a => |->a", {x});
  auto b = einsum("|->2*b => |->b", {x});
  einsum("|->i; |->i => |->i", {b, out_only("z", {5})});
  finish_inference();
  EXPECT_EQ(dims(*a), (Dims{5}));
  EXPECT_EQ(dims(*x), (Dims{10}));
}

TEST_F(DocumentedErrors, DereferencedAboveTheUseSite) {
  auto x = open_output("x");
  einsum("|->i5 => |->i", {x});  // reads index 5 of x's second axis
  op("add", Pointwise{}, {x, out_only("w", {2, 3})});  // which its use sizes 3
  expect_error<ShapeError>([] { finish_inference(); },
                           "dereferenced at dimension 6, higher than use site (3)");
}

TEST_F(DocumentedErrors, PaddingBeyondTheResolvedPadding) {
  auto x = out_only("x", {6});
  auto k = out_only("k", {3});
  einsum("|->o<+k; |->k => |->o", {x, k});
  finish_inference();
  EXPECT_TRUE(padding(*x).empty());  // read: x's buffers are laid out without margins now
  einsum("|->o=+k; |->k => |->o", {x, k});
  const auto msg = expect_error<ShapeError>([] { finish_inference(); },
                                            "Operation padding (1+1) exceeds resolved padding (0+0) of 'x'");
  EXPECT_TRUE(padding(*x).empty());  // not applied
}

TEST_F(DocumentedErrors, PaddingMayGrowUntilItIsRead) {
  auto x = out_only("x", {6});
  auto k3 = out_only("k3", {3});
  einsum("|->o=+k; |->k => |->o", {x, k3});
  finish_inference();
  auto k5 = out_only("k5", {5});
  einsum("|->o=+k; |->k => |->o", {x, k5});
  finish_inference();
  ASSERT_EQ(padding(*x).size(), 1u);
  EXPECT_EQ(padding(*x)[0], (ir::AxisPadding{2, 2}));
  einsum("|->o=+k; |->k => |->o", {x, k3});  // within the resolved padding: fine
  finish_inference();
}

}  // namespace
}  // namespace cannl::shape::testing
