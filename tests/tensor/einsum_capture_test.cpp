// Einsum with captured dimensions through the Tensor API (semantics-frontend.md 2.12).
#include <gtest/gtest.h>

#include "cannl/runtime/context.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/tensor.h"
#include "tensor/compile_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class EinsumCapture : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
};

TEST_F(EinsumCapture, ReadsTheContractedSizeAndComputesLikePlainEinsum) {
  Tensor a = literal("a", {1, 2, 3, 4, 5, 6}, {.batch = Dims{}, .input = Dims{}, .output = Dims{2, 3}});
  Tensor b = literal("b", {1, 0, 0, 1, 2, 2}, {.batch = Dims{}, .input = Dims{}, .output = Dims{3, 2}});
  auto j = shape::capture("j");
  Tensor c = einsum("|->ij; |->jk => |->ik", a, b, {j});
  EXPECT_EQ(shape::solved_dim(j), 3);
  auto ctx = runtime::Context::interpreter();
  auto routine = testing_util::compile_forward(ctx, {c}, "capture");
  ctx.run(routine);
  // c[i][k] = sum_j a[i][j] b[j][k]
  EXPECT_EQ(ctx.get_values(c.value()), (std::vector<double>{7, 8, 16, 17}));
  EXPECT_EQ(shape::solved_dim(j), 3);
}

TEST_F(EinsumCapture, RowVariableOfAUnaryEinsum) {
  Tensor x = literal("x", std::vector<double>(24, 1.0), {.batch = Dims{2, 3}, .input = Dims{}, .output = Dims{4}});
  auto v = shape::capture("v");
  Tensor s = einsum("..v..|->i => ..v..|->", x, {v});
  EXPECT_EQ(shape::solved_dim(v), 6);
  EXPECT_EQ(s.shape_string(), "2,3|");
}

TEST_F(EinsumCapture, UnknownLabel) {
  Tensor x = literal("x", {1, 2}, {.batch = Dims{}, .input = Dims{}, .output = Dims{2}});
  try {
    einsum("|->i => |->i", x, {shape::capture("z")});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Variable 'z' not found in environments for spec"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cannl
