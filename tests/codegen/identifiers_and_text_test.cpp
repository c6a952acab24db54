// Identifier sanitizing and the expression-text helpers of the C-family printer.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/clike/expr_text.h"
#include "codegen/clike/identifiers.h"

namespace cannl::codegen {
namespace {

TEST(Identifiers, SanitizeMakesCIdentifiers) {
  EXPECT_EQ(sanitize_identifier("w1"), "w1");
  EXPECT_EQ(sanitize_identifier("w-1.x"), "w_1_x");
  EXPECT_EQ(sanitize_identifier("grad  w"), "grad_w");  // runs of '_' collapse
  EXPECT_EQ(sanitize_identifier("3d"), "t_3d");
  EXPECT_EQ(sanitize_identifier("_Hidden"), "t_Hidden");  // _X... is reserved to C
  EXPECT_EQ(sanitize_identifier(""), "");
}

TEST(Identifiers, ReservedNamesGetASuffixAndStaticsAvoidNodeNames) {
  IdentifierTable t(c_reserved_words());
  auto a = ir::make_node("sqrtf", ir::DType::F32);
  auto b = ir::make_node("batch", ir::DType::F32);
  ir::StaticSymbol s{ir::fresh_symbol(), 4, "batch"};
  t.assign({a, b}, {s});
  EXPECT_EQ(t.node(*a), "sqrtf_");
  EXPECT_EQ(t.node(*b), "batch");
  EXPECT_EQ(*t.static_symbol(s.symbol), "batch_");
  EXPECT_TRUE(t.is_reserved("v12"));
  EXPECT_TRUE(t.is_reserved("cannl_div_i32"));
  EXPECT_FALSE(t.is_reserved("value"));
}

TEST(ExprText, AtomsAndCasts) {
  EXPECT_TRUE(is_atomic("w[(i0)*3 + i1]"));
  EXPECT_TRUE(is_atomic("expf(x + 1)"));
  EXPECT_TRUE(is_atomic("(a + b)"));
  EXPECT_TRUE(is_atomic("key.v[0]"));
  EXPECT_FALSE(is_atomic("(a) + (b)"));
  EXPECT_FALSE(is_atomic("-1.0"));
  EXPECT_EQ(atom("-x"), "(-x)");
  EXPECT_EQ(c_cast("float", "a + b"), "((float)(a + b))");
  EXPECT_EQ(substitute_spelling("(-$0)", {"-1.0"}, "", ""), "(-(-1.0))");
  EXPECT_EQ(substitute_spelling("fmax$f($0, $1)", {"a", "b"}, "f", ""), "fmaxf(a, b)");
  EXPECT_EQ(substitute_spelling("cannl_div_$T($0, $1)", {"a", "b"}, "", "i64"), "cannl_div_i64(a, b)");
}

TEST(ExprText, LiteralsRoundTrip) {
  EXPECT_EQ(double_literal(0.1), "0.1");
  EXPECT_EQ(double_literal(1.0), "1.0");
  EXPECT_EQ(double_literal(-2.0), "(-2.0)");
  EXPECT_EQ(double_literal(-0.0), "(-0.0)");
  EXPECT_EQ(double_literal(1.0 / 3.0), "0.3333333333333333");  // shortest exact
  EXPECT_EQ(float_literal(0.1f), "0.1f");
  EXPECT_EQ(float_literal(1.0f / 3.0f), "0.33333334f");
  EXPECT_EQ(float_literal(1e20f), "1e+20f");
  EXPECT_EQ(float_literal(-INFINITY), "(-INFINITY)");
  EXPECT_EQ(comment_safe("a */ b"), "a * / b");
}

}  // namespace
}  // namespace cannl::codegen
