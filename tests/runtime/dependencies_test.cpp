// Execution dependencies between the routines of one context (src/runtime/dependencies.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "runtime/test_util.h"

namespace cannl::testing {
namespace {

using ir::DType;
using ir::Op;
using runtime::Context;

// W writes y and z; R reads y and overwrites z. R depends on W twice: read after write through y
// (an upload of y satisfies it) and write after write through z (nothing from outside does). An
// upload of y must not excuse the write after write that W's other node carries.
TEST(DependenciesTest, AnUploadExcusesOnlyTheReadAfterWriteNotAWriteAfterWriteOnTheSameRoutine) {
  auto ctx = Context::interpreter();
  auto x = ir::make_node("x", DType::F32, {2});
  auto y = ir::make_node("y", DType::F32, {2});
  auto z = ir::make_node("z", DType::F32, {2});
  auto w = ctx.compile(accum_sequence({pointwise(y, Op::Mul, {of(x), ir::Operand::literal(2)}),
                                       pointwise(z, Op::Identity, {ir::Operand::literal(7)})}),
                       "W");
  auto r = ctx.compile(single_accum(pointwise(z, Op::Add, {of(y), ir::Operand::literal(1)})), "R");
  ctx.set_values(x, std::vector<double>{1, 2});
  ctx.set_values(y, std::vector<double>{5, 6});
  try {
    ctx.run(r);
    ADD_FAILURE() << "R ran although W, which also writes z, never ran";
  } catch (const RuntimeUsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'R' depends on routine 'W'"), std::string::npos) << message;
    EXPECT_NE(message.find("'z'"), std::string::npos) << message;
  }
  ctx.run(w);
  ctx.run(r);
  EXPECT_EQ(ctx.get_values(z), (std::vector<double>{3, 5}));
}

}  // namespace
}  // namespace cannl::testing
