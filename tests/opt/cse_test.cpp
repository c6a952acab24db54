// CSE within a statement and the alpha-equivalence it relies on, with the 0.8 regressions:
// t[i, j] vs t[i, i] under a renaming, and a nested recomputation at inner loop indices.
#include <gtest/gtest.h>

#include "opt/alpha_equivalence.h"
#include "cannl/ir/verify.h"
#include "opt/cse.h"
#include "rewrite_test_util.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using testing::routine_of;
using testing::run_and_read;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

// {scope v: for loop_sym in [0, 3): v := v + t[first, second]}
ir::ScalarRef sum_scope(const ir::NodeRef& t, ir::Symbol loop_sym, AxisIndex first, AxisIndex second) {
  const int id = ir::fresh_scope_id();
  const auto add = ir::apply(Op::Add, DType::F32, {ir::get_local(id, DType::F32), ir::get(t, {first, second})});
  return ir::local_scope(id, DType::F32, ir::for_loop(loop_sym, 0, 3, ir::set_local(id, add)));
}

TEST(AlphaEquivalence, RenamesLoopSymbolsAndScopesAtBinders) {
  auto t = ir::make_node("t", DType::F32, {3, 3});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  EXPECT_TRUE(alpha_equivalent(sum_scope(t, j, it(i), it(j)), sum_scope(t, k, it(i), it(k))));
  // A free symbol must match exactly.
  EXPECT_FALSE(alpha_equivalent(sum_scope(t, j, it(i), it(j)), sum_scope(t, k, it(k), it(k))));
}

TEST(AlphaEquivalence, RegressionTijIsNotTii) {
  // {for j: t[i, j]} vs {for i: t[i, i]}: mapping j -> i at the binder must stop the free i of the
  // left tree from matching the bound i of the right one (a forward-only map judged them equal).
  auto t = ir::make_node("t", DType::F32, {3, 3});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  EXPECT_FALSE(alpha_equivalent(sum_scope(t, j, it(i), it(j)), sum_scope(t, i, it(i), it(i))));
  EXPECT_FALSE(alpha_equivalent(sum_scope(t, i, it(i), it(i)), sum_scope(t, j, it(i), it(j))));
}

TEST(Cse, SecondEqualScopeInAStatementReadsTheFirst) {
  auto t = ir::make_node("t", DType::F32, {3, 3});
  auto out = ir::make_node("o", DType::F32, {3});
  const ir::Symbol i = ir::fresh_symbol();
  const auto a = sum_scope(t, ir::fresh_symbol(), it(i), AxisIndex::iterator(ir::fresh_symbol()));
  (void)a;
  const ir::Symbol j1 = ir::fresh_symbol(), j2 = ir::fresh_symbol();
  const auto value = ir::apply(Op::Mul, DType::F32, {sum_scope(t, j1, it(i), it(j1)), sum_scope(t, j2, it(i), it(j2))});
  const auto r = routine_of(ir::for_loop(i, 0, 3, ir::set(out, {it(i)}, value)));
  const auto r2 = eliminate_common_subexpressions(r, {});
  const std::string text = ir::print_loop_ir(r2);
  EXPECT_NE(text.find("o[i0] = mul({scope v0:"), std::string::npos) << text;
  EXPECT_NE(text.find("}, v0)"), std::string::npos) << text;
  ir::verify(r2);
  const testing::Fill fill = [&](auto& m) { m.template fill<float>(t, {1, 2, 3, 4, 5, 6, 7, 8, 9}); };
  EXPECT_EQ(run_and_read<float>(r, fill, out), run_and_read<float>(r2, fill, out));
  EXPECT_EQ(run_and_read<float>(r2, fill, out), (std::vector<float>{36, 225, 576}));
}

TEST(Cse, RegressionNestedRecomputationAtInnerIndicesStays) {
  // o[i, c] = x(i, c) / sum_k x(i, k), x an inlined scope: the inner x(i, k) differs from the
  // outer x(i, c) (free k != free c) and sits one scope deeper: it must not read x(i, c)'s local.
  auto t = ir::make_node("t", DType::F32, {2, 3});
  auto out = ir::make_node("o", DType::F32, {2, 3});
  const ir::Symbol i = ir::fresh_symbol(), c = ir::fresh_symbol(), k = ir::fresh_symbol();
  const auto x = [&](AxisIndex col) {
    const int id = ir::fresh_scope_id();
    return ir::local_scope(id, DType::F32, ir::set_local(id, ir::apply(Op::Exp, DType::F32, {ir::get(t, {it(i), col})})));
  };
  const int sum = ir::fresh_scope_id();
  const auto total = ir::local_scope(sum, DType::F32, ir::for_loop(k, 0, 3, ir::set_local(sum,
      ir::apply(Op::Add, DType::F32, {ir::get_local(sum, DType::F32), x(it(k))}))));
  const auto value = ir::apply(Op::Div, DType::F32, {x(it(c)), total});
  const auto r = routine_of(ir::for_loop(i, 0, 2, ir::for_loop(c, 0, 3, ir::set(out, {it(i), it(c)}, value))));
  const auto r2 = eliminate_common_subexpressions(r, {});
  EXPECT_EQ(ir::print_loop_ir(r2), ir::print_loop_ir(r));
  const testing::Fill fill = [&](auto& m) { m.template fill<float>(t, {0, 1, 2, 3, 4, 5}); };
  EXPECT_EQ(run_and_read<float>(r, fill, out), run_and_read<float>(r2, fill, out));
}

}  // namespace
}  // namespace cannl::opt
