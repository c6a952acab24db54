// Assignments-IR constructors and data-flow queries (src/ir/assignments.cpp).
#include <gtest/gtest.h>

#include "cannl/support/error.h"
#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::fx;
using testing::it;

/// lhs[i] accum= op(args[i]...) over a 1-D space of size n (pointwise).
AsgnRef pointwise(NodeRef lhs, Op accum, bool init, Op op, std::vector<NodeRef> args) {
  std::vector<Symbol> s;
  AccumOp a;
  a.lhs = lhs;
  a.accum = accum;
  a.initialize_neutral = init;
  a.op = op;
  a.projections = testing::projections({lhs->dims.at(0)}, s);
  a.projections.lhs_dims = lhs->dims;
  a.projections.project_lhs = {it(s[0])};
  for (auto& n : args) {
    a.args.push_back(Operand::of(n));
    a.projections.rhs_dims.push_back(n->dims);
    a.projections.project_rhs.push_back({it(s[0])});
  }
  return make_accum(std::move(a));
}

std::vector<std::string> names(const std::vector<NodeRef>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n->label);
  return out;
}

TEST(Assignments, MakeAccumChecksArity) {
  AccumOp a;
  a.lhs = make_node("c", DType::F32, {3});
  a.op = Op::Add;
  a.args = {Operand::literal(1)};
  try {
    make_accum(a);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("add takes 2 arguments, got 1 (LHS c)"), std::string::npos)
        << e.what();
  }
}

TEST(Assignments, MakeBlockKeepsBody) {
  auto x = make_node("x", DType::F32, {2});
  auto b = make_block("init", {make_fetch(x, FetchConstant{0})});
  const auto& block = std::get<BlockComment>(b->node);
  EXPECT_EQ(block.text, "init");
  ASSERT_EQ(block.body.size(), 1u);
  EXPECT_EQ(std::get<Fetch>(block.body[0]->node).node, x);
}

TEST(Assignments, ReadBeforeInitialized) {
  auto a = make_node("a", DType::F32, {3});
  auto x = make_node("x", DType::F32, {3});
  auto c = make_node("c", DType::F32, {3});
  auto g = make_node("g", DType::F32, {3});
  auto h = make_node("h", DType::F32, {3});
  Comp comp;
  comp.body = {make_fetch(x, FetchConstant{0}),
               pointwise(c, Op::Add, true, Op::Mul, {a, x}),    // reads a; x already fetched
               pointwise(g, Op::Add, false, Op::Identity, {c}),  // accumulates onto g: reads g
               pointwise(h, Op::Arg2, false, Op::Identity, {c}), // full overwrite: h not read
               pointwise(c, Op::Add, false, Op::Identity, {h})}; // c already written
  EXPECT_EQ(names(read_before_initialized(comp)), (std::vector<std::string>{"a", "g"}));
  EXPECT_EQ(names(written_nodes(comp)), (std::vector<std::string>{"x", "c", "g", "h"}));
}

TEST(Assignments, PartialOverwriteReadsLhs) {
  auto a = make_node("a", DType::F32, {3});
  auto p = make_node("p", DType::F32, {3, 2});
  std::vector<Symbol> s;
  AccumOp op;
  op.lhs = p;
  op.accum = Op::Arg2;
  op.op = Op::Identity;
  op.args = {Operand::of(a)};
  op.projections = testing::projections({3}, s);
  op.projections.lhs_dims = {3, 2};
  op.projections.project_lhs = {it(s[0]), fx(1)};  // only column 1 is overwritten
  op.projections.project_rhs = {{it(s[0])}};
  Comp comp{{make_accum(op)}, {}};
  EXPECT_EQ(names(read_before_initialized(comp)), (std::vector<std::string>{"a", "p"}));
}

TEST(Assignments, SliceReadsParentInsideBlocks) {
  auto parent = make_node("data", DType::F32, {4, 3});
  auto child = make_node("batch_x", DType::F32, {3});
  auto y = make_node("y", DType::F32, {3});
  const StaticSymbol batch{fresh_symbol(), 4, "batch"};
  Comp comp;
  comp.body = {make_block("load", {make_fetch(child, FetchSlice{batch, parent})}),
               make_block("use", {pointwise(y, Op::Add, true, Op::Identity, {child})})};
  EXPECT_EQ(names(read_before_initialized(comp)), (std::vector<std::string>{"data"}));
  EXPECT_EQ(names(written_nodes(comp)), (std::vector<std::string>{"batch_x", "y"}));
}

}  // namespace
}  // namespace cannl::ir
