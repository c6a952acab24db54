// Parsing the strided, convolution and concatenation axes (semantics-frontend.md 2.2, 2.7, 2.8).

#include "cannl/shape/einsum_spec.h"
#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

AxisSpec out_axis(const EinsumSpec& s, std::size_t slot, std::size_t i) {
  return slot == 0 ? s.lhs.output.dims.at(i) : s.rhs.at(slot - 1).output.dims.at(i);
}

TEST(NotationParser, StridedAxis) {
  const auto s = parse_einsum("2*o => o");
  const auto a = out_axis(s, 1, 0);
  EXPECT_EQ(a.kind, AxisSpec::Kind::Affine);
  EXPECT_EQ(a.stride, 2);
  EXPECT_EQ(a.label, "o");
  EXPECT_TRUE(a.kernel.empty());
}

TEST(NotationParser, StridedAxisWithOffset) {
  const auto a = out_axis(parse_einsum("3*o+2 => o"), 1, 0);
  EXPECT_EQ(a.stride, 3);
  EXPECT_EQ(a.offset, 2);
}

TEST(NotationParser, PaddedConvolution) {
  const auto a = out_axis(parse_einsum("o=+k; k => o"), 1, 0);
  EXPECT_EQ(a.kind, AxisSpec::Kind::Affine);
  EXPECT_TRUE(a.use_padding);
  EXPECT_EQ(a.kernel, "k");
  EXPECT_EQ(a.dilation, 1);
}

TEST(NotationParser, ValidConvolutionWithStrideAndDilation) {
  const auto a = out_axis(parse_einsum("2*o<+3*k; k => o"), 1, 0);
  EXPECT_FALSE(a.use_padding);
  EXPECT_EQ(a.stride, 2);
  EXPECT_EQ(a.dilation, 3);
  EXPECT_EQ(a.kernel, "k");
}

TEST(NotationParser, ConvolutionOffset) {
  const auto a = out_axis(parse_einsum("2*o<+1+k; k => o"), 1, 0);
  EXPECT_EQ(a.offset, 1);
  EXPECT_EQ(a.stride, 2);
  EXPECT_EQ(a.kernel, "k");
}

TEST(NotationParser, AConvolutionOffsetMustBeSmallerThanTheStride) {
  // Sizes ignore the offset, so offset >= stride would read past the operand's last cell.
  for (const char* spec : {"o<+1+k; k => o", "o=+5+k; k => o", "2*o<+2+3*k; k => o"}) {
    try {
      parse_einsum(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const EinsumSyntaxError& e) {
      EXPECT_NE(std::string(e.what()).find("a stride offset must be smaller than the stride"), std::string::npos)
          << e.what();
    }
  }
}

TEST(NotationParser, ConcatenationOfLabels) {
  const auto a = out_axis(parse_einsum("a; b => a^b"), 0, 0);
  EXPECT_EQ(a.kind, AxisSpec::Kind::Concat);
  ASSERT_EQ(a.parts.size(), 2u);
  EXPECT_EQ(a.parts[0].label, "a");
  EXPECT_EQ(a.parts[1].label, "b");
}

TEST(NotationParser, ConcatenationWithIntegerParts) {
  const auto a = out_axis(parse_einsum("1^i => i"), 1, 0);
  ASSERT_EQ(a.parts.size(), 2u);
  EXPECT_TRUE(a.parts[0].label.empty());
  EXPECT_EQ(a.parts[0].size, 1);
  EXPECT_EQ(a.parts[1].label, "i");
  const auto b = out_axis(parse_einsum("i => i^2"), 0, 0);
  EXPECT_EQ(b.parts[1].size, 2);
}

TEST(NotationParser, ThreeWayConcatenation) {
  EXPECT_EQ(out_axis(parse_einsum("a^b^c => b"), 1, 0).parts.size(), 3u);
}

TEST(NotationParser, ConvAxisAmongOthers) {
  const auto s = parse_einsum("b, 2*h=+kh, w=+kw, c; kh, kw, c => b, h, w");
  EXPECT_EQ(s.rhs[0].output.dims.size(), 4u);
  EXPECT_EQ(s.rhs[0].output.dims[1].kernel, "kh");
}

TEST(NotationParser, OffsetMustBeBelowStride) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("2*o+2 => o"); }, "smaller than the stride");
}

TEST(NotationParser, StrideMustBePositive) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("0*o => o"); }, "stride must be at least 1");
}

TEST(NotationParser, IdentifierCoefficientRejected) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("s*o => o"); }, "coefficient must be an integer");
}

TEST(NotationParser, MissingKernel) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("o=+ => o"); }, "expected the kernel label");
}

TEST(NotationParser, DanglingCaret) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("a^ => a"); }, "concatenation");
}

TEST(NotationParser, AmpersandRejected) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("a&b => a"); }, "unexpected '&'");
}

TEST(NotationParser, ConvLabelClashesWithRowVariable) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("o=+k, ..k.. => o"); },
                                  "used as both a dimension variable and a row variable");
}

}  // namespace
}  // namespace cannl::shape::testing
