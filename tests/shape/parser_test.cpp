// The einsum parser: modes, rows and their omission forms, row variables, fixed indices, errors.

#include <random>

#include "cannl/shape/einsum_spec.h"
#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

std::vector<std::string> labels(const std::vector<AxisSpec>& axes) {
  std::vector<std::string> out;
  for (const auto& a : axes) out.push_back(a.kind == AxisSpec::Kind::Fixed ? "#" + std::to_string(a.index) : a.label);
  return out;
}
using Names = std::vector<std::string>;

TEST(Parser, ModeDetection) {
  EXPECT_FALSE(is_multichar("ij;jk=>ik"));
  EXPECT_TRUE(is_multichar("abc,=>abc"));
  EXPECT_TRUE(is_multichar("o=+k"));
  EXPECT_TRUE(is_multichar("a+b=>a"));
  EXPECT_FALSE(is_multichar("b|i->o => o"));
}

TEST(Parser, SingleCharAxesAndDigitRuns) {
  const auto s = parse_einsum("i12j;b00c=>ij");
  ASSERT_EQ(s.rhs.size(), 2u);
  EXPECT_EQ(labels(s.rhs[0].output.dims), (Names{"i", "#12", "j"}));
  EXPECT_EQ(labels(s.rhs[1].output.dims), (Names{"b", "#0", "c"}));  // "00" is one integer
  EXPECT_EQ(labels(s.lhs.output.dims), (Names{"i", "j"}));
  EXPECT_FALSE(s.multichar);
}

TEST(Parser, MulticharIdentifiersAndTrailingComma) {
  const auto s = parse_einsum("abc, => abc");
  EXPECT_TRUE(s.multichar);
  EXPECT_EQ(labels(s.rhs[0].output.dims), (Names{"abc"}));
  const auto t = parse_einsum("batch|height, width->chan; chan->out => batch|height,width->out");
  EXPECT_EQ(labels(t.rhs[0].input.dims), (Names{"height", "width"}));
  EXPECT_EQ(labels(t.lhs.output.dims), (Names{"out"}));
}

TEST(Parser, OmittedRowsReadAsContextEllipsis) {
  const auto s = parse_einsum("x => x");
  EXPECT_TRUE(s.rhs[0].batch.omitted && s.rhs[0].batch.is_context);
  EXPECT_TRUE(s.rhs[0].input.omitted && s.rhs[0].input.is_context);
  EXPECT_FALSE(s.rhs[0].output.has_ellipsis);
  const auto io = parse_einsum("i->o => o");
  EXPECT_TRUE(io.rhs[0].batch.is_context);
  EXPECT_FALSE(io.rhs[0].input.has_ellipsis);
  const auto bo = parse_einsum("b|o => o");
  EXPECT_FALSE(bo.rhs[0].batch.has_ellipsis);
  EXPECT_TRUE(bo.rhs[0].input.is_context);
}

TEST(Parser, ExplicitEmptyRowsStayEmpty) {
  const auto s = parse_einsum("|->x => |x");
  EXPECT_FALSE(s.rhs[0].batch.has_ellipsis);
  EXPECT_TRUE(s.rhs[0].batch.dims.empty());
  EXPECT_FALSE(s.rhs[0].input.has_ellipsis);
  EXPECT_FALSE(s.lhs.batch.has_ellipsis);       // |x: no batch
  EXPECT_TRUE(s.lhs.input.is_context);          // input omitted
  const auto t = parse_einsum("->x => x");
  EXPECT_TRUE(t.rhs[0].batch.is_context);
  EXPECT_FALSE(t.rhs[0].input.has_ellipsis);
}

TEST(Parser, NamedRowVariableWithLeadingAndTrailingAxes) {
  const auto s = parse_einsum("ab..v..c => ..v..");
  const auto& r = s.rhs[0].output;
  EXPECT_TRUE(r.has_ellipsis);
  EXPECT_FALSE(r.is_context);
  EXPECT_EQ(r.var_name, "v");
  EXPECT_EQ(labels(r.beg), (Names{"a", "b"}));
  EXPECT_EQ(labels(r.dims), (Names{"c"}));
  const auto t = parse_einsum("j...->i => i");
  EXPECT_EQ(labels(t.rhs[0].input.beg), (Names{"j"}));
  EXPECT_TRUE(t.rhs[0].input.is_context);
}

TEST(Parser, MulticharRowVariable) {
  const auto s = parse_einsum("x, ..rest.., y => ..rest..");
  EXPECT_EQ(s.rhs[0].output.var_name, "rest");
  EXPECT_EQ(labels(s.rhs[0].output.beg), (Names{"x"}));
  EXPECT_EQ(labels(s.rhs[0].output.dims), (Names{"y"}));
}

TEST(Parser, UnderscoreIsALabel) {
  const auto s = parse_einsum("_i=>i");
  EXPECT_EQ(labels(s.rhs[0].output.dims), (Names{"_", "i"}));
}

TEST(Parser, ThreeOperands) {
  const auto s = parse_einsum("ij;jk;km=>im");
  EXPECT_EQ(s.rhs.size(), 3u);
}

TEST(Parser, UnexpectedTokenHasCaret) {
  const auto msg = expect_error<EinsumSyntaxError>([] { parse_einsum("ij;jk=>ik;"); },
                                                   "unexpected ';' at position 9");
  EXPECT_NE(msg.find("  ij;jk=>ik;\n           ^"), std::string::npos) << msg;
}

TEST(Parser, MissingResult) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("ij;jk"); }, "unexpected end of spec at position 5");
}

TEST(Parser, SecondEllipsisInRow) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("...i... => i"); }, "only one ellipsis per row");
}

TEST(Parser, BadCharacter) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("i$j=>i"); }, "unexpected character '$' at position 1");
}

TEST(Parser, NameUsedAsDimAndRowVariable) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("d..d.. => d"); },
                                  "Name 'd' is used as both a dimension variable and a row variable");
}

TEST(Parser, ConvolutionNeedsPaddingMarker) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("o+k; k => o"); },
                                  "use_padding must be specified in convolution spec");
}

TEST(Parser, MulticharNeedsCommasBetweenAxes) {
  expect_error<EinsumSyntaxError>([] { parse_einsum("ab cd, => ab"); }, "expected ',' between axes");
}

TEST(Parser, FuzzNeverCrashesOrHangs) {
  std::mt19937 rng(12345);
  const std::string alphabet = "ij k0123|->=>;...,_*+^&<=v";
  int parsed = 0, rejected = 0;
  for (int n = 0; n < 2000; ++n) {
    std::string spec;
    const int len = static_cast<int>(rng() % 16);
    for (int i = 0; i < len; ++i) {
      const auto r = rng();
      // Mostly structural characters, sometimes a random byte.
      spec += (r % 17 == 0) ? static_cast<char>(rng() % 256) : alphabet[r % alphabet.size()];
    }
    if (n % 3 == 0) spec += "=>i";
    try {
      parse_einsum(spec);
      ++parsed;
    } catch (const EinsumSyntaxError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(parsed + rejected, 2000);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace cannl::shape::testing
