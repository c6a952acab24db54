// cast: precision conversion of a tensor, used to widen the accumulator of a long f32 reduction
// (nn::Linear::accumulate, GPT-2). Values are checked against exact binary fractions.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/runtime/context.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"
#include "tensor/compile_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;
using ir::DType;

class Cast : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }

  static std::vector<double> evaluate(runtime::Context ctx, const Tensor& t) {
    auto routine = testing_util::compile_forward(ctx, {t}, "evaluate");
    ctx.run(routine);
    return ctx.get_values(t.value());
  }
};

const double kHalfUlp = std::ldexp(1.0, -24);  // half an f32 ulp of 1

TEST_F(Cast, WideAccumulatorKeepsWhatF32Rounds) {
  // 1 + 2^-24 + 2^-24: each f32 partial sum is a tie that rounds back to 1, the f64 sum is exact
  // and 1 + 2^-23 is an f32.
  Tensor x = literal("x", {1.0, kHalfUlp, kHalfUlp}, {.output = Dims{3}, .dtype = DType::F32});
  Tensor wide = cast(sum(cast(x, DType::F64)), DType::F32);
  EXPECT_EQ(cast(x, DType::F64).value()->dtype, DType::F64);
  EXPECT_EQ(wide.value()->dtype, DType::F32);
  for (auto ctx : {runtime::Context::interpreter(), runtime::Context::cpu()}) {
    EXPECT_EQ(evaluate(ctx, sum(x)), std::vector<double>{1.0});
    EXPECT_EQ(evaluate(ctx, wide), std::vector<double>{1.0 + 2 * kHalfUlp});
  }
}

TEST_F(Cast, NarrowingRoundsToNearestEven) {
  Tensor x = literal("x", {1.0 + kHalfUlp, 1.0 + kHalfUlp + std::ldexp(1.0, -40), -3.0},
                     {.output = Dims{3}, .dtype = DType::F64});
  EXPECT_EQ(evaluate(runtime::Context::cpu(), cast(x, DType::F32)),
            (std::vector<double>{1.0, 1.0 + 2 * kHalfUlp, -3.0}));
}

TEST_F(Cast, SameDTypeIsTheSameTensor) {
  Tensor x = literal("x", {1, 2}, {.output = Dims{2}, .dtype = DType::F32});
  EXPECT_EQ(cast(x, DType::F32).id(), x.id());
}

TEST_F(Cast, GradientPassesThrough) {
  // d/dx sum(cast(x * x, f64)) = 2x, delivered to the f32 parameter's gradient.
  Tensor x = param("x", {.input = Dims{}, .output = Dims{3}, .dtype = DType::F32});
  Tensor loss = sum(cast(pointmul(x, x), DType::F64));
  auto ctx = runtime::Context::interpreter();
  auto routine = ctx.compile(grad_update_code(loss), "grad");
  ctx.set_values(x.value(), std::vector<double>{-1.5, 0, 2});
  ctx.run(routine);
  EXPECT_EQ(ctx.get_values(x.grad()), (std::vector<double>{-3, 0, 4}));
  EXPECT_EQ(ctx.get_values(loss.value()), std::vector<double>{6.25});
}

TEST_F(Cast, NoGradientFlowsThroughACastToAnIntegerDType) {
  // loss = sum(i32(x) * y): piecewise constant in x, so d loss / dx = 0 (it was y passed through
  // an i32 gradient node, truncated: {0, 3} for y = {0.75, 3.5}); d loss / dy = i32(x).
  Tensor x = param("x", {.input = Dims{}, .output = Dims{2}, .dtype = DType::F64});
  Tensor y = param("y", {.input = Dims{}, .output = Dims{2}, .dtype = DType::F64});
  Tensor loss = sum(pointmul(cast(x, DType::I32), y));
  for (auto ctx : {runtime::Context::interpreter(), runtime::Context::cpu()}) {
    auto routine = ctx.compile(grad_update_code(loss), "grad");
    ctx.set_values(x.value(), std::vector<double>{1.5, 2.5});
    ctx.set_values(y.value(), std::vector<double>{0.75, 3.5});
    ctx.run(routine);
    EXPECT_EQ(ctx.get_values(x.grad()), (std::vector<double>{0, 0}));
    EXPECT_EQ(ctx.get_values(y.grad()), (std::vector<double>{1, 2}));
  }
}

}  // namespace
}  // namespace cannl
