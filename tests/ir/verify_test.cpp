// The loop-IR verifier rejects each broken invariant with a message naming the routine, the
// problem and the statement (src/ir/verify.cpp).
#include <gtest/gtest.h>

#include "cannl/ir/verify.h"
#include "cannl/support/error.h"
#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::it;

/// Runs verify on `body` and returns the InternalError message ("" when it passes).
std::string failure(StmtRef body, std::vector<StaticSymbol> statics = {}) {
  try {
    verify({"routine_x", std::move(body), std::move(statics)});
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

/// An Apply built without the arity check of apply().
ScalarRef raw_apply(Op op, DType dt, std::vector<ScalarRef> args) {
  return std::make_shared<const Scalar>(Scalar{Apply{op, dt, std::move(args)}});
}

struct Fixture {
  NodeRef c = make_node("c", DType::F32, {3});
  NodeRef n = make_node("n", DType::I32, {3});
  NodeRef key = make_node("key", DType::U4x32, {});
  Symbol i = fresh_symbol();
  StmtRef loop(ScalarRef value) { return for_loop(i, 0, 3, set(c, {it(i)}, std::move(value))); }
};

TEST(Verify, AcceptsWellFormedRoutines) {
  Fixture f;
  const StaticSymbol batch{fresh_symbol(), 3, "batch"};
  EXPECT_EQ(failure(f.loop(get(f.c, {it(f.i)}))), "");
  EXPECT_EQ(failure(set(f.c, {it(batch.symbol)}, constant(1, DType::F32)), {batch}), "");
  const int scope = fresh_scope_id();
  EXPECT_EQ(failure(seq({declare_local(scope, DType::F32, false),
                         f.loop(get_local(scope, DType::F32))})),
            "");
  EXPECT_EQ(failure(set(f.c, {AxisIndex::fixed(2)},
                        raw_apply(Op::Uniform1, DType::F32,
                                  {raw_apply(Op::ThreefryLight, DType::U4x32,
                                             {get(f.key, {}), get(f.key, {})})}))),
            "");
}

TEST(Verify, RankMismatch) {
  Fixture f;
  const auto msg = failure(f.loop(get(f.c, {it(f.i), it(f.i)})));
  EXPECT_NE(msg.find("verify(routine_x): node c has rank 1 but is indexed with 2 axes"),
            std::string::npos)
      << msg;
  const std::string i = "?i" + std::to_string(f.i.id);  // printed alone: the loop is outside
  EXPECT_NE(msg.find("in statement:\nc[" + i + "] = c[" + i + ", " + i + "]"), std::string::npos)
      << msg;
}

TEST(Verify, UnboundSymbol) {
  Fixture f;
  const auto msg = failure(set(f.c, {it(f.i)}, constant(0, DType::F32)));
  EXPECT_NE(msg.find("bound by no enclosing loop and no routine static"), std::string::npos) << msg;
}

TEST(Verify, LoopBounds) {
  Fixture f;
  const auto msg = failure(for_loop(f.i, 3, 2, set(f.c, {it(f.i)}, constant(0, DType::F32))));
  EXPECT_NE(msg.find("loop bounds [3, 2) have end < begin"), std::string::npos) << msg;
}

TEST(Verify, LoopRebindsSymbol) {
  Fixture f;
  const auto msg = failure(for_loop(f.i, 0, 3, f.loop(constant(0, DType::F32))));
  EXPECT_NE(msg.find("loop rebinds symbol"), std::string::npos) << msg;
}

TEST(Verify, UndeclaredLocal) {
  Fixture f;
  const int scope = fresh_scope_id();
  auto msg = failure(f.loop(get_local(scope, DType::F32)));
  EXPECT_NE(msg.find("local scope " + std::to_string(scope) + " is not declared"),
            std::string::npos)
      << msg;
  // A declaration is visible only to later statements of its own sequence.
  msg = failure(seq({seq({declare_local(scope, DType::F32, false)}),
                     f.loop(get_local(scope, DType::F32))}));
  EXPECT_NE(msg.find("is not declared"), std::string::npos) << msg;
  msg = failure(set_local(scope, constant(1, DType::F32)));
  EXPECT_NE(msg.find("is not declared"), std::string::npos) << msg;
}

TEST(Verify, WrongArity) {
  Fixture f;
  const auto msg = failure(f.loop(raw_apply(Op::Add, DType::F32, {get(f.c, {it(f.i)})})));
  EXPECT_NE(msg.find("add takes 2 arguments, got 1"), std::string::npos) << msg;
}

TEST(Verify, OpUnsupportedForIntegers) {
  Fixture f;
  auto msg = failure(for_loop(f.i, 0, 3, set(f.n, {it(f.i)},
                                              apply(Op::Exp, DType::I32, {get(f.n, {it(f.i)})}))));
  EXPECT_NE(msg.find("exp is not defined for integer type i32"), std::string::npos) << msg;
  msg = failure(f.loop(apply(Op::Add, DType::U4x32, {get(f.key, {}), get(f.key, {})})));
  EXPECT_NE(msg.find("add is not defined for u4x32"), std::string::npos) << msg;
}

TEST(Verify, RandomBitsTypes) {
  Fixture f;
  auto msg = failure(f.loop(apply(Op::Uniform1, DType::F32, {get(f.c, {it(f.i)})})));
  EXPECT_NE(msg.find("uniform1 needs a u4x32 argument"), std::string::npos) << msg;
  msg = failure(f.loop(apply(Op::ThreefryCrypto, DType::F32, {get(f.key, {}), get(f.key, {})})));
  EXPECT_NE(msg.find("threefry4x32_crypto must compute in u4x32, not f32"), std::string::npos)
      << msg;
}

TEST(Verify, FixedIndexOutOfRange) {
  Fixture f;
  auto msg = failure(set(f.c, {AxisIndex::fixed(3)}, constant(0, DType::F32)));
  EXPECT_NE(msg.find("fixed index 3 is outside [0, 3) on axis 0 of node c"), std::string::npos)
      << msg;
  msg = failure(set(f.c, {AxisIndex::fixed(0)}, get(f.c, {AxisIndex::fixed(-1)})));
  EXPECT_NE(msg.find("fixed index -1 is outside"), std::string::npos) << msg;
}

TEST(Verify, ScopeBodiesAreChecked) {
  Fixture f;
  const int scope = fresh_scope_id();
  const Symbol free = fresh_symbol();
  auto value = local_scope(scope, DType::F32, set_local(scope, get(f.c, {it(free)})));
  const auto msg = failure(f.loop(value));
  EXPECT_NE(msg.find("bound by no enclosing loop"), std::string::npos) << msg;
  EXPECT_EQ(failure(f.loop(local_scope(scope, DType::F32,
                                       set_local(scope, get(f.c, {it(f.i)}))))),
            "");
}

}  // namespace
}  // namespace cannl::ir
