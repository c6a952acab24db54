// Which threads of a one-block kernel hold a local's value: a setter on every thread covers any
// read; one on the first thread only (padded into one-iteration thread loops) covers reads there
// only; one under a longer thread loop (each thread its own iterations) only reads in its body.
#include <gtest/gtest.h>

#include "schedule/local_reach.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisIndex;
using ir::AxisType;
using ir::DType;

struct Kernel {
  ir::NodeRef x = ir::make_node("x", DType::F32, {8});
  ir::NodeRef y = ir::make_node("y", DType::F32, {8});
  int v = ir::fresh_scope_id();

  // v := v + x[0], under a thread loop of `threads` iterations (0: none).
  ir::StmtRef setter(std::int64_t threads) const {
    const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {AxisIndex::fixed(0)})});
    return under_threads(threads, [&](ir::Symbol) { return ir::set_local(v, add); });
  }
  // y[j] = v * x[j] on `threads` threads (one: the first).
  ir::StmtRef reader(std::int64_t threads) const {
    return under_threads(threads, [&](ir::Symbol j) {
      const auto mul = ir::apply(ir::Op::Mul, DType::F32, {ir::get_local(v, DType::F32), ir::get(x, {it(j)})});
      return ir::set(y, {it(j)}, mul);
    });
  }
  template <typename Body>
  static ir::StmtRef under_threads(std::int64_t threads, Body body) {
    const ir::Symbol j = ir::fresh_symbol();
    if (threads == 0) return body(j);
    return ir::for_loop(j, 0, threads, body(j), AxisType::Workgroup);
  }
  std::string check(const std::vector<ir::StmtRef>& stmts) const {
    const auto body = ir::seq(stmts);
    return detail::first_read_without_its_local(body, ir::kernel_geometry(body), {v});
  }
};

TEST(LocalReach, ASetterOnEveryThreadCoversReadsOnAnyThread) {
  const Kernel k;
  EXPECT_EQ(k.check({k.setter(0), k.reader(8)}), "");
  EXPECT_EQ(k.check({k.setter(0), k.reader(1), k.setter(0), k.reader(8)}), "");
}

TEST(LocalReach, ASetterOnTheFirstThreadCoversReadsThereOnly) {
  const Kernel k;
  EXPECT_EQ(k.check({k.setter(1), k.reader(1)}), "");
  EXPECT_TRUE(has(k.check({k.setter(0), k.setter(1), k.reader(8)}), "y[")) << "the other threads miss the update";
  EXPECT_EQ(k.check({k.setter(0), k.reader(8), k.setter(1), k.reader(1)}), "") << "a setter reaches no earlier statement";
}

TEST(LocalReach, ASetterUnderALongerThreadLoopCoversReadsInItsBodyOnly) {
  const Kernel k;
  EXPECT_TRUE(has(k.check({k.setter(8), k.reader(1)}), "y[")) << "each thread holds its own iteration's value";
  // for j Workgroup: { v := x[j]; y[j] = v }: a per-iteration temporary, on its iteration's thread.
  const ir::Symbol j = ir::fresh_symbol();
  const auto temp = ir::for_loop(j, 0, 8, ir::seq({ir::set_local(k.v, ir::get(k.x, {it(j)})),
                                                    ir::set(k.y, {it(j)}, ir::get_local(k.v, DType::F32))}),
                                 AxisType::Workgroup);
  EXPECT_EQ(k.check({temp}), "");
  // A sibling thread loop reading it: thread j has its own x[j], the interpreter the last one.
  EXPECT_TRUE(has(k.check({k.setter(8), k.reader(8)}), "y["));
}

TEST(LocalReach, AConditionReadsTheLocalWhereItIsTested) {
  const Kernel k;
  const auto positive = ir::apply(ir::Op::Cmplt, DType::I64, {ir::constant(0, DType::F32), ir::get_local(k.v, DType::F32)});
  const auto guarded = ir::if_then(positive, k.reader(8));
  EXPECT_EQ(k.check({k.setter(0), guarded}), "");
  EXPECT_TRUE(has(k.check({k.setter(1), guarded}), "if")) << "every thread tests v";
}

TEST(LocalReach, ASlotOfOneThreadIsEveryThreadOfIt) {
  // A block of one thread: its one-iteration loop is no restriction.
  const Kernel k;
  EXPECT_EQ(k.check({k.setter(1), k.reader(0)}), "");
}

}  // namespace
}  // namespace cannl::schedule::testing
