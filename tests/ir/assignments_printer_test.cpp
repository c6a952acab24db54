// Text of the Assignments IR (src/ir/assignments_printer.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::fx;
using testing::it;

struct Matmul {
  NodeRef a = make_node("a", DType::F32, {2, 3});
  NodeRef b = make_node("b", DType::F32, {3, 4});
  NodeRef c = make_node("c", DType::F32, {2, 4});
  std::vector<Symbol> s;
  AccumOp op;
  Matmul() {
    op.lhs = c;
    op.accum = Op::Add;
    op.initialize_neutral = true;
    op.op = Op::Mul;
    op.args = {Operand::of(a), Operand::of(b)};
    op.projections = testing::projections({2, 4, 3}, s);
    op.projections.lhs_dims = {2, 4};
    op.projections.rhs_dims = {{2, 3}, {3, 4}};
    op.projections.project_lhs = {it(s[0]), it(s[1])};
    op.projections.project_rhs = {{it(s[0]), it(s[2])}, {it(s[2]), it(s[1])}};
    op.projections.debug = "ij;jk=>ik";
  }
  std::string idx(int k) const { return it(s[k]).to_string(); }
};

TEST(AssignmentsPrinter, MatmulLine) {
  Matmul m;
  EXPECT_EQ(print_accum_op(m.op), "c[" + m.idx(0) + ", " + m.idx(1) + "] =:+ a[" + m.idx(0) +
                                      ", " + m.idx(2) + "] * b[" + m.idx(2) + ", " + m.idx(1) +
                                      "]   # ij;jk=>ik");
}

TEST(AssignmentsPrinter, AccumulatorSpellings) {
  Matmul m;
  m.op.projections.debug.clear();
  const std::string lhs = "c[" + m.idx(0) + ", " + m.idx(1) + "]";
  m.op.initialize_neutral = false;
  EXPECT_EQ(print_accum_op(m.op).substr(0, lhs.size() + 4), lhs + " =+ ");
  m.op.accum = Op::Max;
  m.op.initialize_neutral = true;
  EXPECT_EQ(print_accum_op(m.op).substr(0, lhs.size() + 5), lhs + " =:@^");
  m.op.accum = Op::Arg2;
  EXPECT_EQ(print_accum_op(m.op).substr(0, lhs.size() + 4), lhs + " =: ");
  m.op.initialize_neutral = false;
  EXPECT_EQ(print_accum_op(m.op).substr(0, lhs.size() + 4), lhs + " =: ");
}

TEST(AssignmentsPrinter, UnaryIdentityAndConstants) {
  Matmul m;
  m.op.projections.debug.clear();
  m.op.op = Op::Relu;
  m.op.args = {Operand::of(m.a)};
  m.op.projections.project_rhs = {{it(m.s[0]), it(m.s[2])}};
  const std::string lhs = "c[" + m.idx(0) + ", " + m.idx(1) + "] =:+ ";
  const std::string a = "a[" + m.idx(0) + ", " + m.idx(2) + "]";
  EXPECT_EQ(print_accum_op(m.op), lhs + "relu(" + a + ")");
  m.op.op = Op::Identity;
  EXPECT_EQ(print_accum_op(m.op), lhs + a);
  m.op.op = Op::Max;
  m.op.args = {Operand::of(m.a), Operand::literal(0.5)};
  m.op.projections.project_rhs.push_back({});
  EXPECT_EQ(print_accum_op(m.op), lhs + "max(" + a + ", 0.5)");
}

TEST(AssignmentsPrinter, Fetches) {
  auto x = make_node("x", DType::F32, {3});
  auto p = make_node("p", DType::F32, {4, 3});
  const StaticSymbol batch{fresh_symbol(), 4, "batch"};
  EXPECT_EQ(print_fetch({x, FetchConstant{0}}), "x := 0");
  EXPECT_EQ(print_fetch({x, FetchConstant{-INFINITY}}), "x := -inf");
  EXPECT_EQ(print_fetch({x, FetchConstantBits{42}}), "x := bits(42)");
  EXPECT_EQ(print_fetch({x, FetchConstantFill{{1, 2.5, 3}}}), "x := [1, 2.5, 3]");
  EXPECT_EQ(print_fetch({x, FetchRangeOverOffsets{}}), "x := range_over_offsets");
  EXPECT_EQ(print_fetch({x, FetchSlice{batch, p}}), "x := slice(p, batch)");
  EXPECT_EQ(print_fetch({x, FetchEmbedSymbol{batch}}), "x := embed_symbol(batch)");
}

TEST(AssignmentsPrinter, BlocksIndentBodies) {
  Matmul m;
  auto x = make_node("x", DType::F32, {3});
  Comp comp;
  comp.body = {make_block("forward", {make_fetch(x, FetchConstant{1}),
                                      make_block("inner", {make_accum(m.op)})}),
               make_fetch(x, FetchConstant{0.1})};
  EXPECT_EQ(print_assignments(comp), "# forward\n  x := 1\n  # inner\n    " +
                                         print_accum_op(m.op) + "\nx := 0.1\n");
}

TEST(AssignmentsPrinter, NumbersKeepFullPrecision) {
  EXPECT_EQ(format_ir_number(0.1), "0.1");
  EXPECT_EQ(format_ir_number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(format_ir_number(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(format_ir_number(1e20), "1e+20");
  EXPECT_EQ(format_ir_number(INFINITY), "inf");
}

}  // namespace
}  // namespace cannl::ir
