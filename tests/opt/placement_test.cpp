// Placement decisions, virtualization and observability, end to end through Context (the
// interpreter backend), plus the regressions of the 0.8 notes that touch this layer.
#include <gtest/gtest.h>

#include "cannl/ir/assignments.h"
#include "cannl/ir/lower.h"
#include "cannl/opt/optimize.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "runtime/test_util.h"

namespace cannl::opt {
namespace {

using cannl::testing::pointwise_projections;
using ir::MemoryMode;
using ir::Op;
using ir::Operand;

ir::AccumOp accum(ir::NodeRef lhs, Op acc, Op op, std::vector<Operand> args, ir::Projections p,
                  bool init = true) {
  ir::AccumOp a;
  a.lhs = std::move(lhs);
  a.accum = acc;
  a.initialize_neutral = init;
  a.op = op;
  a.args = std::move(args);
  a.projections = std::move(p);
  return a;
}

ir::NodeRef input(const std::string& name, std::vector<std::int64_t> dims) {
  auto n = ir::make_node(name, ir::DType::F32, std::move(dims));
  ir::update_memory_mode(*n, MemoryMode::Materialized, 900);
  return n;
}

/// c[i] = sum_k a[i, k] (extent k).
ir::Projections reduce_last(std::int64_t i, std::int64_t k) {
  const ir::Symbol si = ir::fresh_symbol(), sk = ir::fresh_symbol();
  ir::Projections p;
  p.product_space = {i, k};
  p.product_iterators = {si, sk};
  p.lhs_dims = {i};
  p.rhs_dims = {{i, k}};
  p.project_lhs = {ir::AxisIndex::iterator(si)};
  p.project_rhs = {{ir::AxisIndex::iterator(si), ir::AxisIndex::iterator(sk)}};
  return p;
}

Optimized optimized(const ir::Comp& comp, PassContext ctx = {}) {
  return optimize(ir::lower(comp, "t"), ctx, true);
}

TEST(Placement, PointwiseChainIsInlined) {
  auto a = input("a", {4}), b = input("b", {4});
  auto c = ir::make_node("c", ir::DType::F32, {4});
  auto d = input("d", {4});  // materialized output
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Add, {Operand::of(a), Operand::of(b)}, pointwise_projections({4}, 2)),
       accum(d, Op::Arg2, Op::Mul, {Operand::of(c), Operand::of(c)}, pointwise_projections({4}, 2))});
  PassContext ctx;
  ctx.max_visits = 2;  // c is read twice per cell
  const auto o = optimized(comp, ctx);
  EXPECT_EQ(o.decisions.at(c->id).placement, Placement::Virtual);
  EXPECT_EQ(o.decisions.at(a->id).placement, Placement::OnDevice);
  for (const auto& n : ir::nodes_of(o.routine.body)) EXPECT_NE(n->id, c->id);
}

TEST(Placement, VisitCapStoresLocally) {
  auto a = input("a", {4}), b = input("b", {4});
  auto c = ir::make_node("c", ir::DType::F32, {4});
  auto d = input("d", {4});
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Add, {Operand::of(a), Operand::of(b)}, pointwise_projections({4}, 2)),
       accum(d, Op::Arg2, Op::Mul, {Operand::of(c), Operand::of(c)}, pointwise_projections({4}, 2))});
  const auto o = optimized(comp);
  EXPECT_EQ(o.decisions.at(c->id).placement, Placement::Local);
  EXPECT_EQ(o.decisions.at(c->id).provenance, 1);
}

TEST(Placement, RecurrentAndReadOnlyNodesStayOnDevice) {
  auto a = ir::make_node("a", ir::DType::F32, {4});
  auto acc = ir::make_node("acc", ir::DType::F32, {4});
  auto comp = cannl::testing::single_accum(
      accum(acc, Op::Add, Op::Identity, {Operand::of(a)}, pointwise_projections({4}, 1), false));
  const auto o = optimized(comp);
  EXPECT_EQ(o.decisions.at(acc->id).placement, Placement::OnDevice);
  EXPECT_EQ(o.decisions.at(acc->id).provenance, 36);
  EXPECT_EQ(o.decisions.at(a->id).provenance, 37);
}

TEST(Placement, ReductionCapAndSizeThreshold) {
  auto a = input("a", {2, 32});
  auto s = ir::make_node("s", ir::DType::F32, {2});
  auto out = input("out", {2});
  auto comp = cannl::testing::accum_sequence(
      {accum(s, Op::Add, Op::Identity, {Operand::of(a)}, reduce_last(2, 32)),
       accum(out, Op::Arg2, Op::Neg, {Operand::of(s)}, pointwise_projections({2}, 1))});
  auto o = optimized(comp);
  EXPECT_EQ(o.decisions.at(s->id).provenance, 39);
  EXPECT_EQ(o.decisions.at(s->id).placement, Placement::Local);
  PassContext tiny;
  tiny.stack_threshold_bytes = 4;
  o = optimized(comp, tiny);
  EXPECT_EQ(o.decisions.at(s->id).placement, Placement::OnDevice);
  PassContext generous;
  generous.max_inline_reduction = 64;
  o = optimized(comp, generous);
  EXPECT_EQ(o.decisions.at(s->id).placement, Placement::Virtual);
}

TEST(Placement, DeclaredIntentIsRespected) {
  auto a = input("a", {4});
  auto c = ir::make_node("c", ir::DType::F32, {4});
  ir::update_memory_mode(*c, MemoryMode::NeverVirtual, 901);
  auto d = input("d", {4});
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Neg, {Operand::of(a)}, pointwise_projections({4}, 1)),
       accum(d, Op::Arg2, Op::Neg, {Operand::of(c)}, pointwise_projections({4}, 1))});
  const auto o = optimized(comp);
  EXPECT_EQ(o.decisions.at(c->id).placement, Placement::Local);
  EXPECT_EQ(o.decisions.at(c->id).provenance, 3);
  EXPECT_EQ(o.decisions.at(d->id).placement, Placement::OnDevice);
}

TEST(Placement, FanInCap) {
  std::vector<ir::NodeRef> ins;
  for (int k = 0; k < 10; ++k) ins.push_back(input("x" + std::to_string(k), {2}));
  std::vector<ir::AccumOp> ops;
  ir::NodeRef prev = ins[0];
  std::vector<ir::NodeRef> chain;
  for (int k = 1; k < 10; ++k) {
    auto t = ir::make_node("t" + std::to_string(k), ir::DType::F32, {2});
    ops.push_back(accum(t, Op::Arg2, Op::Add, {Operand::of(prev), Operand::of(ins[static_cast<std::size_t>(k)])},
                        pointwise_projections({2}, 2)));
    chain.push_back(t);
    prev = t;
  }
  auto out = input("out", {2});
  ops.push_back(accum(out, Op::Arg2, Op::Neg, {Operand::of(prev)}, pointwise_projections({2}, 1)));
  const auto o = optimized(cannl::testing::accum_sequence(ops));
  EXPECT_EQ(o.decisions.at(chain[7]->id).provenance, 41);  // t8 would read x0..x8
  EXPECT_EQ(o.decisions.at(chain[0]->id).placement, Placement::Virtual);
}

// A negative cap would store every node that replays any reduction, silently: like the other
// two caps, it is a ConfigError naming the key.
TEST(Placement, ANegativeInliningCapIsAConfigError) {
  for (const char* key : {"virtualize_max_inline_reduction", "virtualize_max_inline_fanin", "virtualize_max_visits"}) {
    config::set_override(key, "-1");
    try {
      PassContext::from_config("step");
      ADD_FAILURE() << key << " = -1 was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
    config::set_override(key, "");
  }
}

TEST(Placement, OptimizeOffKeepsEverythingOnDevice) {
  auto a = input("a", {4});
  auto c = ir::make_node("c", ir::DType::F32, {4});
  auto d = input("d", {4});
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Neg, {Operand::of(a)}, pointwise_projections({4}, 1)),
       accum(d, Op::Arg2, Op::Neg, {Operand::of(c)}, pointwise_projections({4}, 1))});
  const auto lowered = ir::lower(comp, "t");
  const auto o = optimize(lowered, PassContext{}, false);
  EXPECT_EQ(o.routine.body, lowered.body);
  EXPECT_EQ(o.decisions.at(c->id).placement, Placement::OnDevice);
}

TEST(Observability, ReadingAnOptimizedAwayNodeSaysHowToKeepIt) {
  auto a = input("a", {4});
  auto c = ir::make_node("c_hidden", ir::DType::F32, {4});
  auto d = input("d", {4});
  auto comp = cannl::testing::accum_sequence(
      {accum(c, Op::Arg2, Op::Neg, {Operand::of(a)}, pointwise_projections({4}, 1)),
       accum(d, Op::Arg2, Op::Neg, {Operand::of(c)}, pointwise_projections({4}, 1))});
  auto ctx = runtime::Context::interpreter();
  auto r = ctx.compile(comp, "obs");
  ctx.set_values(a, std::vector<double>{1, 2, 3, 4});
  ctx.run(r);
  EXPECT_EQ(ctx.get_values(d), (std::vector<double>{1, 2, 3, 4}));
  try {
    (void)ctx.get_values(c);
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("optimized away"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("materialized"), std::string::npos) << e.what();
  }
}

/// Runs `comp` on the interpreter optimized or not and returns `out`'s values.
std::vector<double> run_values(const ir::Comp& comp, const std::vector<std::pair<ir::NodeRef, std::vector<double>>>& in,
                               const ir::NodeRef& out, bool optimize_on) {
  config::set_override("optimize", optimize_on ? "true" : "false");
  auto ctx = runtime::Context::interpreter();
  auto r = ctx.compile(comp, "regression");
  config::set_override("optimize", "");
  for (const auto& [n, v] : in) ctx.set_values(n, v);
  ctx.run(r);
  return ctx.get_values(out);
}

// 0.8 "Fixed": an input of an inlined computation rewritten between the computation and its read
// (the shape of a forward/backward fragment-order bug) must not be read at its new value.
TEST(Regression, InputRewrittenBeforeReadIsNotInlined) {
  auto a = input("a", {3});
  auto t = ir::make_node("t", ir::DType::F32, {3});
  auto u = ir::make_node("u", ir::DType::F32, {3});
  auto out = input("out", {3});
  auto comp = cannl::testing::accum_sequence(
      {accum(t, Op::Arg2, Op::Identity, {Operand::of(a)}, pointwise_projections({3}, 1)),
       accum(u, Op::Arg2, Op::Neg, {Operand::of(t)}, pointwise_projections({3}, 1)),
       accum(t, Op::Add, Op::Identity, {Operand::of(a)}, pointwise_projections({3}, 1), false),
       accum(out, Op::Arg2, Op::Add, {Operand::of(u), Operand::of(t)}, pointwise_projections({3}, 2))});
  const std::vector<std::pair<ir::NodeRef, std::vector<double>>> in{{a, {1, 2, 3}}};
  EXPECT_EQ(run_values(comp, in, out, true), run_values(comp, in, out, false));
  EXPECT_EQ(run_values(comp, in, out, true), (std::vector<double>{1, 2, 3}));
}

// 0.8 "Fixed": a node read before the routine writes it (fragments in the wrong order) keeps its
// buffer (recurrent), so optimized code reads what unoptimized code reads.
TEST(Regression, ReadBeforeWriteKeepsState) {
  auto a = input("a", {2});
  auto h = ir::make_node("h", ir::DType::F32, {2});
  auto out = input("out", {2});
  auto comp = cannl::testing::accum_sequence(
      {accum(out, Op::Arg2, Op::Neg, {Operand::of(h)}, pointwise_projections({2}, 1)),
       accum(h, Op::Arg2, Op::Identity, {Operand::of(a)}, pointwise_projections({2}, 1))});
  const auto o = optimized(comp);
  EXPECT_EQ(o.decisions.at(h->id).provenance, 36);
}

// 0.8 "Fixed": a 1-element node ([1]) read as a scalar must inline like any other node.
TEST(Regression, OneElementNodeInlinesAtFixedIndex) {
  auto a = input("a", {5});
  auto s = ir::make_node("s", ir::DType::F32, {1});
  auto out = input("out", {5});
  ir::Projections sum;
  const ir::Symbol k = ir::fresh_symbol();
  sum.product_space = {5};
  sum.product_iterators = {k};
  sum.lhs_dims = {1};
  sum.rhs_dims = {{5}};
  sum.project_lhs = {ir::AxisIndex::fixed(0)};
  sum.project_rhs = {{ir::AxisIndex::iterator(k)}};
  ir::Projections bcast;
  const ir::Symbol i = ir::fresh_symbol();
  bcast.product_space = {5};
  bcast.product_iterators = {i};
  bcast.lhs_dims = {5};
  bcast.rhs_dims = {{5}, {1}};
  bcast.project_lhs = {ir::AxisIndex::iterator(i)};
  bcast.project_rhs = {{ir::AxisIndex::iterator(i)}, {ir::AxisIndex::fixed(0)}};
  auto comp = cannl::testing::accum_sequence(
      {accum(s, Op::Add, Op::Identity, {Operand::of(a)}, sum),
       accum(out, Op::Arg2, Op::Sub, {Operand::of(a), Operand::of(s)}, bcast)});
  const std::vector<std::pair<ir::NodeRef, std::vector<double>>> in{{a, {1, 2, 3, 4, 5}}};
  EXPECT_EQ(run_values(comp, in, out, true), (std::vector<double>{-14, -13, -12, -11, -10}));
}

// 0.8 "Fixed": two inlined copies of one virtual node at different inner indices in the same
// statement (out[i, j] = v[i] * v[j]) must stay distinct through CSE.
TEST(Regression, NestedRecomputationAtInnerIndicesIsNotMerged) {
  auto a = input("a", {3});
  auto v = ir::make_node("v", ir::DType::F32, {3});
  auto out = input("out", {3, 3});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  ir::Projections outer;
  outer.product_space = {3, 3};
  outer.product_iterators = {i, j};
  outer.lhs_dims = {3, 3};
  outer.rhs_dims = {{3}, {3}};
  outer.project_lhs = {ir::AxisIndex::iterator(i), ir::AxisIndex::iterator(j)};
  outer.project_rhs = {{ir::AxisIndex::iterator(i)}, {ir::AxisIndex::iterator(j)}};
  auto comp = cannl::testing::accum_sequence(
      {accum(v, Op::Arg2, Op::Add, {Operand::of(a), Operand::of(a)}, pointwise_projections({3}, 2)),
       accum(out, Op::Arg2, Op::Mul, {Operand::of(v), Operand::of(v)}, outer)});
  config::set_override("virtualize_max_visits", "100");
  const std::vector<std::pair<ir::NodeRef, std::vector<double>>> in{{a, {1, 2, 3}}};
  const auto got = run_values(comp, in, out, true);
  config::set_override("virtualize_max_visits", "");
  EXPECT_EQ(got, (std::vector<double>{4, 8, 12, 8, 16, 24, 12, 24, 36}));
}

// 0.8 "Fixed": (a / b) / c must mean a / (b * c), never (a * c) / b.
TEST(Regression, DivisionChainKeepsItsMeaning) {
  auto a = input("a", {2}), b = input("b", {2}), c = input("c", {2});
  auto q = ir::make_node("q", ir::DType::F32, {2});
  auto out = input("out", {2});
  auto comp = cannl::testing::accum_sequence(
      {accum(q, Op::Arg2, Op::Div, {Operand::of(a), Operand::of(b)}, pointwise_projections({2}, 2)),
       accum(out, Op::Arg2, Op::Div, {Operand::of(q), Operand::of(c)}, pointwise_projections({2}, 2))});
  const std::vector<std::pair<ir::NodeRef, std::vector<double>>> in{{a, {1, 3}}, {b, {2, 4}}, {c, {4, 8}}};
  const auto got = run_values(comp, in, out, true);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], 0.125, 1e-7);
  EXPECT_NEAR(got[1], 3.0 / 32.0, 1e-7);
}

}  // namespace
}  // namespace cannl::opt
