// Structure of lowered accumulating assignments (src/ir/lower.cpp, lower_accum.cpp). Numeric
// checks through the interpreter and the C backend live in tests/runtime.
#include <gtest/gtest.h>

#include "cannl/ir/verify.h"
#include "cannl/support/error.h"
#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::fx;
using testing::it;
using testing::lowered_text;

/// An assignment with projections filled in by the caller through `s` (fresh iterators).
struct Accum {
  std::vector<Symbol> s;
  AccumOp op;
  Accum(NodeRef lhs, Op accum, bool init, Op fn, std::vector<std::int64_t> space) {
    op.lhs = std::move(lhs);
    op.accum = accum;
    op.initialize_neutral = init;
    op.op = fn;
    op.projections = testing::projections(std::move(space), s);
    op.projections.lhs_dims = op.lhs->logical_dims();
  }
  Accum& lhs(std::vector<AxisIndex> idx) {
    op.projections.project_lhs = std::move(idx);
    return *this;
  }
  Accum& arg(NodeRef n, std::vector<AxisIndex> idx) {
    op.projections.rhs_dims.push_back(n->logical_dims());
    op.args.push_back(Operand::of(std::move(n)));
    op.projections.project_rhs.push_back(std::move(idx));
    return *this;
  }
  Accum& literal(double v) {
    op.args.push_back(Operand::literal(v));
    op.projections.rhs_dims.push_back({});
    op.projections.project_rhs.push_back({});
    return *this;
  }
  Comp comp() const { return Comp{{make_accum(op)}, {}}; }
};

TEST(Lower, PointwiseIsAPlainStore) {
  auto a = make_node("a", DType::F32, {2, 3}), b = make_node("b", DType::F32, {2, 3});
  auto c = make_node("c", DType::F32, {2, 3});
  Accum x(c, Op::Add, true, Op::Add, {2, 3});
  x.lhs({it(x.s[0]), it(x.s[1])}).arg(a, {it(x.s[0]), it(x.s[1])}).arg(b, {it(x.s[0]), it(x.s[1])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 2):\n"
            "  for i1 in [0, 3):\n"
            "    c[i0, i1] = add(a[i0, i1], b[i0, i1])\n");
}

TEST(Lower, MatmulZeroesThenAccumulates) {
  auto a = make_node("a", DType::F32, {2, 3}), b = make_node("b", DType::F32, {3, 4});
  auto c = make_node("c", DType::F32, {2, 4});
  Accum x(c, Op::Add, true, Op::Mul, {2, 4, 3});
  x.lhs({it(x.s[0]), it(x.s[1])}).arg(a, {it(x.s[0]), it(x.s[2])}).arg(b, {it(x.s[2]), it(x.s[1])});
  EXPECT_EQ(lowered_text(x.comp()),
            "zero_out c\n"
            "for i0 in [0, 2):\n"
            "  for i1 in [0, 4):\n"
            "    for i2 in [0, 3):\n"
            "      c[i0, i1] = add(c[i0, i1], mul(a[i0, i2], b[i2, i1]))\n");
}

TEST(Lower, AccumulationWithoutResetHasNoInit) {
  auto g = make_node("g", DType::F32, {3}), y = make_node("y", DType::F32, {3});
  Accum x(g, Op::Add, false, Op::Identity, {3});
  x.lhs({it(x.s[0])}).arg(y, {it(x.s[0])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  g[i0] = add(g[i0], y[i0])\n");
}

TEST(Lower, MaxReductionFillsMinusInfinity) {
  auto a = make_node("a", DType::F32, {2, 5}), m = make_node("m", DType::F32, {2});
  Accum x(m, Op::Max, true, Op::Identity, {2, 5});
  x.lhs({it(x.s[0])}).arg(a, {it(x.s[0]), it(x.s[1])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 2):\n"
            "  m[i0] = -inf\n"
            "for i1 in [0, 2):\n"
            "  for i2 in [0, 5):\n"
            "    m[i1] = max(m[i1], a[i1, i2])\n");
}

TEST(Lower, ResetSubtractionWrittenOnceStartsFromZero) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3});
  Accum x(c, Op::Sub, true, Op::Identity, {3});
  x.lhs({it(x.s[0])}).arg(a, {it(x.s[0])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  c[i0] = sub(0, a[i0])\n");
}

TEST(Lower, FixedLhsIndexIsNotSurjective) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3, 2});
  Accum x(c, Op::Add, true, Op::Identity, {3});
  x.lhs({it(x.s[0]), fx(1)}).arg(a, {it(x.s[0])});
  EXPECT_EQ(lowered_text(x.comp()),
            "zero_out c\n"
            "for i0 in [0, 3):\n"
            "  c[i0, 1] = add(c[i0, 1], a[i0])\n");
}

TEST(Lower, OverwriteIsAlwaysAPlainStore) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3, 2});
  Accum x(c, Op::Arg2, false, Op::Identity, {3});
  x.lhs({it(x.s[0]), fx(1)}).arg(a, {it(x.s[0])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  c[i0, 1] = a[i0]\n");
}

/// y[o] accum= x[o + k - 1] over o in [0, 3), k in [0, 3): x has one margin cell on each side.
Accum pooling(NodeRef y, NodeRef xs, Op accum) {
  Accum x(std::move(y), accum, true, Op::Identity, {3, 3});
  x.lhs({it(x.s[0])}).arg(std::move(xs), {AxisIndex{{{1, x.s[0]}, {1, x.s[1]}}, -1}});
  return x;
}

TEST(Lower, PaddedOperandOfMaxGetsMarginsReset) {
  auto xs = make_node("x", DType::F32, {5});
  xs->padding = {{1, 1}};
  xs->pad_value = 0.0;
  auto x = pooling(make_node("y", DType::F32, {3}), xs, Op::Max);
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  y[i0] = -inf\n"
            "x[0] = -inf\n"
            "x[4] = -inf\n"
            "for i1 in [0, 3):\n"
            "  for i2 in [0, 3):\n"
            "    y[i1] = max(y[i1], x[i1 + i2])\n");
}

TEST(Lower, PaddedOperandWithMatchingPadValueIsNotReset) {
  auto xs = make_node("x", DType::F32, {5});
  xs->padding = {{1, 1}};
  xs->pad_value = 0.0;
  auto x = pooling(make_node("y", DType::F32, {3}), xs, Op::Add);
  EXPECT_EQ(lowered_text(x.comp()),
            "zero_out y\n"
            "for i0 in [0, 3):\n"
            "  for i1 in [0, 3):\n"
            "    y[i0] = add(y[i0], x[i0 + i1])\n");
  xs->pad_value.reset();  // unknown pad value: reset before every use
  EXPECT_NE(lowered_text(x.comp()).find("x[0] = 0\nx[4] = 0\n"), std::string::npos);
}

TEST(Lower, PaddedLhsWithNonZeroPadValueIsFilledCellByCell) {
  auto a = make_node("a", DType::F32, {3, 4}), s = make_node("s", DType::F32, {5});
  s->padding = {{1, 1}};
  s->pad_value = 1.0;
  Accum x(s, Op::Add, true, Op::Identity, {3, 4});
  x.lhs({it(x.s[0])}).arg(a, {it(x.s[0]), it(x.s[1])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  s[i0 + 1] = 0\n"
            "for i1 in [0, 3):\n"
            "  for i2 in [0, 4):\n"
            "    s[i1 + 1] = add(s[i1 + 1], a[i1, i2])\n");
}

TEST(Lower, BroadcastScalarOperandAndConstant) {
  auto a = make_node("a", DType::F32, {2, 3}), w = make_node("w", DType::F32, {});
  auto c = make_node("c", DType::F64, {2});
  Accum x(c, Op::Add, true, Op::Mul, {2, 3});
  x.lhs({it(x.s[0])}).arg(a, {it(x.s[0]), it(x.s[1])}).arg(w, {});
  EXPECT_EQ(lowered_text(x.comp()),
            "zero_out c\n"
            "for i0 in [0, 2):\n"
            "  for i1 in [0, 3):\n"
            "    c[i0] = add:f64(c[i0], mul:f64(a[i0, i1], w))\n");
  Accum y(make_node("d", DType::BF16, {2}), Op::Arg2, false, Op::Mul, {2});
  y.lhs({it(y.s[0])}).literal(0.5).arg(c, {it(y.s[0])});
  EXPECT_EQ(lowered_text(y.comp()),
            "for i0 in [0, 2):\n"
            "  d[i0] = mul(0.5, c[i0])\n");  // bf16 computes in f32
}

TEST(Lower, GeneralRightHandSideExpression) {
  auto g = make_node("g", DType::F32, {3}), t = make_node("t", DType::F32, {3});
  auto dt = make_node("dt", DType::F32, {3});
  Accum x(dt, Op::Add, false, Op::Identity, {3});
  x.lhs({it(x.s[0])}).arg(g, {it(x.s[0])}).arg(t, {it(x.s[0])});
  using E = RhsExpr;  // dt =+ g * (1 - t*t)
  x.op.expr = E::apply(Op::Mul, {E::argument(0), E::apply(Op::Sub, {E::constant(1),
                                                  E::apply(Op::Mul, {E::argument(1), E::argument(1)})})});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  dt[i0] = add(dt[i0], mul(g[i0], sub(1, mul(t[i0], t[i0]))))\n");
  const std::string i = it(x.s[0]).to_string();
  EXPECT_EQ(print_accum_op(x.op),
            "dt[" + i + "] =+ mul(g[" + i + "], sub(1, mul(t[" + i + "], t[" + i + "])))");
  x.op.expr = E::apply(Op::Neg, {E::argument(2)});
  EXPECT_THROW(make_accum(x.op), InternalError);
}

TEST(Lower, ExtentOneAxesGetNoLoop) {
  auto a = make_node("a", DType::F32, {1, 3}), c = make_node("c", DType::F32, {1, 3});
  Accum x(c, Op::Add, true, Op::Neg, {1, 3});
  x.lhs({it(x.s[0]), it(x.s[1])}).arg(a, {it(x.s[0]), it(x.s[1])});
  EXPECT_EQ(lowered_text(x.comp()),
            "for i0 in [0, 3):\n"
            "  c[0, i0] = neg(a[0, i0])\n");
}

TEST(Lower, StaticSymbolsStayAndLoopSymbolsAreFresh) {
  auto data = make_node("data", DType::F32, {4, 3}), c = make_node("c", DType::F32, {3});
  const StaticSymbol batch{fresh_symbol(), 4, "batch"};
  Accum x(c, Op::Add, true, Op::Identity, {3});
  x.lhs({it(x.s[0])}).arg(data, {it(batch.symbol), it(x.s[0])});
  Comp comp{{make_accum(x.op), make_accum(x.op)}, {batch}};
  const auto routine = lower(comp, "step");
  EXPECT_NO_THROW(verify(routine));
  EXPECT_EQ(testing::strip_comments(print_loop_ir(routine)),
            "# step (statics: batch)\n"
            "for i0 in [0, 3):\n"
            "  c[i0] = data[batch, i0]\n"
            "for i1 in [0, 3):\n"
            "  c[i1] = data[batch, i1]\n");
  const auto& first = std::get<For>(std::get<Seq>(routine.body->node).stmts[0]->node);
  EXPECT_NE(first.index, x.s[0]);
}

TEST(Lower, SetCommentIsTheSourceAssignment) {
  // Its symbols named by first appearance, so the same program built again (fresh symbols)
  // lowers to the same routine, comments included.
  auto comment_of_exp = [] {
    auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3});
    Accum x(c, Op::Arg2, false, Op::Exp, {3});
    x.lhs({it(x.s[0])}).arg(a, {it(x.s[0])});
    x.op.projections.debug = "i=>i";
    const auto routine = lower(x.comp(), "r");
    const auto& loop = std::get<For>(std::get<Seq>(routine.body->node).stmts[0]->node);
    return std::get<Set>(loop.body->node).comment;
  };
  EXPECT_EQ(comment_of_exp(), "c[i0] =: exp(a[i0])   # i=>i");
  EXPECT_EQ(comment_of_exp(), "c[i0] =: exp(a[i0])   # i=>i");
}

TEST(Lower, BlockCommentsBecomeCommentLines) {
  auto c = make_node("c", DType::F32, {3});
  Comp comp{{make_block("init", {make_fetch(c, FetchConstant{0})})}, {}};
  EXPECT_EQ(lowered_text(comp), "# init\nzero_out c\n");
}

TEST(Lower, RankMismatchIsAnInternalError) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {1});
  Accum x(c, Op::Arg2, false, Op::Identity, {3});
  x.op.projections.lhs_dims = {};
  x.lhs({}).arg(a, {it(x.s[0])});
  try {
    lower(x.comp(), "r");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("node c has rank 1 but is indexed with 0 axes"),
              std::string::npos)
        << e.what();
  }
}

TEST(Lower, MalformedProjectionsAreAnInternalError) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3});
  Accum x(c, Op::Arg2, false, Op::Identity, {3});
  x.lhs({it(x.s[0])}).arg(a, {it(x.s[0])});
  x.op.projections.project_rhs.clear();
  EXPECT_THROW(lower(x.comp(), "r"), InternalError);
}

}  // namespace
}  // namespace cannl::ir

namespace cannl::ir {
namespace {

TEST(Lower, LoopCodeIsEmittedAsWrittenAfterItsComment) {
  auto a = make_node("a", DType::F32, {3}), c = make_node("c", DType::F32, {3});
  const Symbol i = fresh_symbol();
  const StmtRef body = for_loop(i, 0, 3, set(c, {AxisIndex::iterator(i)}, get(a, {AxisIndex::iterator(i)})));
  Comp comp{{make_loop_code({"copy", {a}, {c}, body})}, {}};
  const auto routine = lower(comp, "r");
  const auto stmts = flatten_seq(routine.body);
  ASSERT_EQ(stmts.size(), 2u);
  EXPECT_EQ(std::get<Comment>(stmts[0]->node).text, "c := loop code copy(a)");
  EXPECT_EQ(stmts[1], body);
  EXPECT_EQ(read_before_initialized(comp), std::vector<NodeRef>{a});
  EXPECT_EQ(written_nodes(comp), std::vector<NodeRef>{c});
}

TEST(Lower, LoopCodeOverAPaddedNodeIsAnInternalError) {
  auto a = make_node("a", DType::F32, {5});
  a->padding = {{1, 1}};
  const Symbol i = fresh_symbol();
  const StmtRef body = for_loop(i, 0, 3, set(a, {AxisIndex::iterator(i)}, constant(0, DType::F32)));
  Comp comp{{make_loop_code({"fill", {}, {a}, body})}, {}};
  EXPECT_THROW(lower(comp, "r"), InternalError);
}

}  // namespace
}  // namespace cannl::ir
