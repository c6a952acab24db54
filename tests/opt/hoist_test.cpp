// Cross-statement hoisting (semantics 4.9): a LocalScope shared by sibling statements is computed
// once before its first user; hazards, If guards and free locals keep it in place. Text checks
// plus numeric equality with the unhoisted routine on the interpreter and the C backend.
#include <gtest/gtest.h>

#include "backends/run_util.h"
#include "opt/backend_agreement.h"
#include "cannl/ir/verify.h"
#include "opt/cse.h"
#include "opt/hoist.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

AxisIndex it(ir::Symbol s) { return AxisIndex::iterator(s); }

using test_util::cc;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

using testing::check_rewrite;

// {scope v: for j in [0, 3): v := v + t[i, j]}: a fresh copy each call (fresh j and scope id).
ir::ScalarRef row_sum(const ir::NodeRef& t, ir::Symbol i) {
  const int id = ir::fresh_scope_id();
  const ir::Symbol j = ir::fresh_symbol();
  auto add = ir::apply(Op::Add, DType::F32, {ir::get_local(id, DType::F32), ir::get(t, {it(i), it(j)})});
  return ir::local_scope(id, DType::F32, ir::for_loop(j, 0, 3, ir::set_local(id, add)));
}

ir::ScalarRef times(ir::ScalarRef x, double c) {
  return ir::apply(Op::Mul, DType::F32, {std::move(x), ir::constant(c, DType::F32)});
}

struct Nodes {
  ir::NodeRef t = ir::make_node("t", DType::F32, {2, 3});
  ir::NodeRef a = ir::make_node("a", DType::F32, {2});
  ir::NodeRef b = ir::make_node("b", DType::F32, {2, 4});
  ir::NodeRef c = ir::make_node("c", DType::F32, {2});
  ir::Symbol i = ir::fresh_symbol();
  std::vector<Bytes> inputs() const { return {bytes_of(std::vector<float>{1, 2, 3.5f, -4, 5, 6.25f}), {}, {}, {}}; }
  std::vector<ir::NodeRef> params() const { return {t, a, b, c}; }
  backends::CompileRequest request(std::vector<ir::StmtRef> stmts) const {
    return {ir::LoweredRoutine{"hoist", ir::for_loop(i, 0, 2, ir::seq(std::move(stmts))), {}}, params()};
  }
};

TEST(Hoist, SharedScopeIsComputedOnceBeforeItsFirstUser) {
  Nodes n;
  const ir::Symbol k = ir::fresh_symbol();
  // a[i] = 2 * rs(i); for k: b[i, k] = rs(i) + k; c[i] = 3 * rs(i)
  const auto r = n.request({
      ir::set(n.a, {it(n.i)}, times(row_sum(n.t, n.i), 2)),
      ir::for_loop(k, 0, 4, ir::set(n.b, {it(n.i), it(k)}, ir::apply(Op::Add, DType::F32,
          {row_sum(n.t, n.i), ir::embed_index(it(k))}))),
      ir::set(n.c, {it(n.i)}, times(row_sum(n.t, n.i), 3)),
  });
  const auto after = hoist_cross_statement_cse(r.routine, {});
  const std::string text = ir::print_loop_ir(after);
  EXPECT_EQ(count(text, "{scope"), 0) << text;
  EXPECT_EQ(count(text, "declare v0:f32 = 0"), 1) << text;  // read (v0 + t) before any definite set
  EXPECT_LT(text.find("declare v0"), text.find("a[i0] ="));
  EXPECT_TRUE(has(text, "b[i0, i2] = add(v0, ")) << text;  // also hoisted out of the k loop
  const auto out = check_rewrite(r, after, n.inputs());
  EXPECT_EQ(values_of<float>(out[1]), (std::vector<float>{13, 14.5f}));
  EXPECT_EQ(ir::print_loop_ir(hoist_cross_statement_cse(after, {})), text);  // idempotent
}

TEST(Hoist, DefiniteSetNeedsNoInit) {
  Nodes n;
  const auto scope = [&] {
    const int id = ir::fresh_scope_id();
    return ir::local_scope(id, DType::F32, ir::set_local(id, ir::apply(Op::Exp, DType::F32, {ir::get(n.t, {it(n.i), AxisIndex::fixed(1)})})));
  };
  const auto r = n.request({ir::set(n.a, {it(n.i)}, times(scope(), 2)), ir::set(n.c, {it(n.i)}, times(scope(), 3))});
  const auto after = hoist_cross_statement_cse(r.routine, {});
  const std::string text = ir::print_loop_ir(after);
  EXPECT_TRUE(has(text, "declare v0:f32\n")) << text;
  EXPECT_FALSE(has(text, "{scope")) << text;
  check_rewrite(r, after, n.inputs());
}

TEST(Hoist, HazardBetweenUsersKeepsTheScopes) {
  Nodes n;
  // a[i] = rs(i); t[i, 0] = 7; c[i] = rs(i): the second rs reads the new t.
  const auto r = n.request({
      ir::set(n.a, {it(n.i)}, row_sum(n.t, n.i)),
      ir::set(n.t, {it(n.i), AxisIndex::fixed(0)}, ir::constant(7, DType::F32)),
      ir::set(n.c, {it(n.i)}, row_sum(n.t, n.i)),
  });
  const auto after = hoist_cross_statement_cse(r.routine, {});
  EXPECT_EQ(ir::print_loop_ir(after), ir::print_loop_ir(r.routine));
  const auto out = check_rewrite(r, after, n.inputs());
  EXPECT_EQ(values_of<float>(out[3]), (std::vector<float>{12.5f, 18.25f}));
}

TEST(Hoist, HazardInsideANestedLoopOfAUserKeepsTheScopes) {
  Nodes n;
  const ir::Symbol k = ir::fresh_symbol();
  // for k: { b[i, k] = rs(i); t[i, 1] = b[i, k] }  then c[i] = rs(i): the loop user rewrites t.
  const auto r = n.request({
      ir::for_loop(k, 0, 3, ir::seq({ir::set(n.b, {it(n.i), it(k)}, row_sum(n.t, n.i)),
                                     ir::set(n.t, {it(n.i), AxisIndex::fixed(1)}, ir::get(n.b, {it(n.i), it(k)}))})),
      ir::set(n.c, {it(n.i)}, row_sum(n.t, n.i)),
  });
  const auto after = hoist_cross_statement_cse(r.routine, {});
  EXPECT_EQ(ir::print_loop_ir(after), ir::print_loop_ir(r.routine));
  check_rewrite(r, after, n.inputs());
}

TEST(Hoist, UseUnderAnIfIsNotHoisted) {
  Nodes n;
  const auto positive = ir::apply(Op::Cmplt, DType::F32, {ir::constant(0, DType::F32), ir::get(n.t, {it(n.i), AxisIndex::fixed(0)})});
  const auto r = n.request({
      ir::set(n.a, {it(n.i)}, row_sum(n.t, n.i)),
      ir::if_then(positive, ir::set(n.c, {it(n.i)}, row_sum(n.t, n.i))),
  });
  const auto after = hoist_cross_statement_cse(r.routine, {});
  EXPECT_EQ(ir::print_loop_ir(after), ir::print_loop_ir(r.routine));
}

TEST(Hoist, UseInAnIfConditionIsHoisted) {
  Nodes n;
  const auto positive = ir::apply(Op::Cmplt, DType::F32, {ir::constant(7, DType::F32), row_sum(n.t, n.i)});
  const auto r = n.request({
      ir::set(n.a, {it(n.i)}, row_sum(n.t, n.i)),
      ir::if_then(positive, ir::set(n.c, {it(n.i)}, ir::constant(1, DType::F32))),
  });
  const auto after = hoist_cross_statement_cse(r.routine, {});
  EXPECT_EQ(count(ir::print_loop_ir(after), "{scope"), 0) << ir::print_loop_ir(after);
  const auto out = check_rewrite(r, after, n.inputs());
  EXPECT_EQ(values_of<float>(out[3]), (std::vector<float>{0, 1}));
}

TEST(Hoist, CseLocalsOfAReplacedCopyAreRenamed) {
  Nodes n;
  // a[i] = rs(i) * rs(i) (CSE: rs(i) * v) ; c[i] = rs(i) + rs(i) (CSE: rs(i) + w).
  const auto r = n.request({
      ir::set(n.a, {it(n.i)}, ir::apply(Op::Mul, DType::F32, {row_sum(n.t, n.i), row_sum(n.t, n.i)})),
      ir::set(n.c, {it(n.i)}, ir::apply(Op::Add, DType::F32, {row_sum(n.t, n.i), row_sum(n.t, n.i)})),
  });
  const auto cse = eliminate_common_subexpressions(r.routine, {});
  const auto after = hoist_cross_statement_cse(cse, {});
  const std::string text = ir::print_loop_ir(after);
  EXPECT_TRUE(has(text, "c[i0] = add(v0, v0)")) << text;
  EXPECT_EQ(count(text, "{scope"), 0) << text;
  const auto out = check_rewrite(r, after, n.inputs());
  EXPECT_EQ(values_of<float>(out[3]), (std::vector<float>{13, 14.5f}));
}

TEST(Hoist, ScopeReadingAFreeLocalStays) {
  Nodes n;
  // Each statement's inner copy reads its enclosing scope's local: not self-contained.
  const auto outer = [&] {
    const int o = ir::fresh_scope_id();
    const int id = ir::fresh_scope_id();
    auto inner = ir::local_scope(id, DType::F32, ir::set_local(id, times(ir::get_local(o, DType::F32), 2)));
    return ir::local_scope(o, DType::F32, ir::seq({ir::set_local(o, ir::get(n.t, {it(n.i), AxisIndex::fixed(2)})),
                                                   ir::set_local(o, inner)}));
  };
  const auto r = n.request({ir::set(n.a, {it(n.i)}, times(outer(), 1)), ir::set(n.c, {it(n.i)}, times(outer(), 5))});
  const auto after = hoist_cross_statement_cse(r.routine, {});
  // The outer scopes are equal and self-contained: they hoist, and their bodies keep the inner ones.
  const std::string text = ir::print_loop_ir(after);
  EXPECT_EQ(count(text, "{scope"), 1) << text;
  check_rewrite(r, after, n.inputs());
}

}  // namespace
}  // namespace cannl::opt
