// Parameters whose shapes are inferred from their uses get the initialization of their real
// shape: fan-in from the inferred input axes (not 1), and one independent random value per
// element (not a smaller counter broadcast along the inferred axes, which repeated values).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "cannl/runtime/context.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class InferredParamInit : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
};

std::vector<double> initialized(const Tensor& w, runtime::Context ctx) {
  ctx.run(ctx.compile(init_params_code({w}), "init"));
  return ctx.get_values(w.value());
}

// w: [100 -> 50] with its input row inferred from x.
Tensor inferred_weight(InitKind kind) {
  Tensor x = literal("x", std::vector<double>(3 * 100, 0.5), {.batch = Dims{3}, .output = Dims{100}});
  Tensor w = param("w", {.output = Dims{50}, .init = {.kind = kind}});
  (void)(w * x).dims();  // shape inference gives w its input row
  return w;
}

TEST_F(InferredParamInit, KaimingUsesTheInferredFanIn) {
  Tensor w = inferred_weight(InitKind::Kaiming);
  EXPECT_EQ(w.dims(), (Dims{50, 100}));
  const double bound = std::sqrt(6.0 / 100.0);  // fan_in 100; with fan_in 1 it would be 2.45
  for (auto ctx : {runtime::Context::cpu(), runtime::Context::interpreter()}) {
    const auto values = initialized(w, ctx);
    double largest = 0;
    for (double v : values) largest = std::max(largest, std::abs(v));
    EXPECT_LE(largest, bound);
    EXPECT_GT(largest, 0.9 * bound) << "the values do not fill the Kaiming range of fan-in 100";
  }
}

TEST_F(InferredParamInit, XavierUsesTheInferredFans) {
  Tensor w = inferred_weight(InitKind::Xavier);
  const double bound = std::sqrt(6.0 / (100.0 + 50.0));
  const auto values = initialized(w, runtime::Context::cpu());
  double largest = 0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.9 * bound);
}

TEST_F(InferredParamInit, EveryElementDrawsItsOwnValue) {
  Tensor w = inferred_weight(InitKind::Kaiming);
  const auto values = initialized(w, runtime::Context::cpu());
  ASSERT_EQ(values.size(), 5000u);
  const std::set<double> distinct(values.begin(), values.end());
  EXPECT_GT(distinct.size(), 4900u) << "repeated random values along an inferred axis";
  // The realized spread matches a uniform on [-b, b]: std b / sqrt(3).
  double mean = 0, sq = 0;
  for (double v : values) mean += v / 5000.0;
  for (double v : values) sq += (v - mean) * (v - mean) / 5000.0;
  EXPECT_NEAR(std::sqrt(sq), std::sqrt(6.0 / 100.0) / std::sqrt(3.0), 0.01);
}

// A parameter read by a padded convolution has margins in its buffer; its init writes its own
// cells only (it had iterated the padded extent and written past the buffer's end), with the
// values the same parameter gets unpadded.
TEST_F(InferredParamInit, AnOperandOfAPaddedConvolutionInitializesItsOwnCells) {
  auto initial_values = [](bool padded, runtime::Context ctx) {
    reset_tensor_state();
    Tensor x = param("conv_x", {.input = Dims{}, .output = Dims{6}, .init = {.kind = InitKind::Uniform}});
    if (padded) {
      Tensor k = literal("conv_k", {1.0, 1.0, 1.0}, {.output = Dims{3}});
      (void)einsum("i=+k;k=>i", x, k).dims();
    } else {
      (void)x.dims();
    }
    auto values = initialized(x, ctx);
    EXPECT_EQ(x.value()->padding.empty(), !padded) << "the convolution gave x no margins";
    return values;
  };
  for (const bool on_cpu : {false, true}) {
    auto make = [&] { return on_cpu ? runtime::Context::cpu() : runtime::Context::interpreter(); };
    const auto unpadded = initial_values(false, make());
    const auto padded = initial_values(true, make());
    ASSERT_EQ(padded.size(), 6u);
    EXPECT_EQ(padded, unpadded);
  }
}

}  // namespace
}  // namespace cannl
