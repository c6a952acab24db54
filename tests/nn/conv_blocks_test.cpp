// Convolution blocks: fan-in initialization, shapes of strided / padded / dilated outputs and
// usage errors (values and gradients: parity_test.cpp and blocks_gradient_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cannl/cannl.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class ConvBlocks : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

Tensor image(const Dims& hwc) {
  std::int64_t n = 2;
  for (auto d : hwc) n *= d;
  return literal("x", std::vector<double>(static_cast<std::size_t>(n), 0.5), {.batch = Dims{2}, .output = hwc});
}

TEST_F(ConvBlocks, KernelIsUniformWithinTheFanInBoundAndBiasIsZero) {
  nn::Conv2d conv("conv", {.in_channels = 3, .out_channels = 16, .kernel = 5, .padding = true});
  Tensor y = conv(image({8, 8, 3}));
  resolve_shapes({y});
  auto ctx = runtime::Context::interpreter();
  ctx.run(ctx.compile(init_params_code(params_of({y})), "init"));
  const auto w = ctx.get_values(conv.w.value());
  ASSERT_EQ(w.size(), 16u * 5 * 5 * 3);
  const double bound = std::sqrt(6.0 / (5 * 5 * 3));  // Kaiming uniform, fan_in = kh * kw * c
  const auto [lo, hi] = std::minmax_element(w.begin(), w.end());
  EXPECT_GE(*lo, -bound);
  EXPECT_LE(*hi, bound);
  // 1200 uniform draws reach close to both ends of the interval.
  EXPECT_LT(*lo, -0.9 * bound);
  EXPECT_GT(*hi, 0.9 * bound);
  for (double b : ctx.get_values(conv.b->value())) EXPECT_EQ(b, 0.0);
}

TEST_F(ConvBlocks, OutputShapesFollowStridePaddingAndDilation) {
  nn::Conv2d same("same", {.in_channels = 3, .out_channels = 4, .stride = 2, .padding = true});
  nn::Conv2d dilated("dilated", {.in_channels = 3, .out_channels = 2, .dilation = 2});
  nn::DepthwiseSeparableConv2d ds("ds", {.in_channels = 3, .out_channels = 5, .padding = true});
  Tensor a = same(image({8, 6, 3})), b = dilated(image({8, 6, 3})), c = ds(image({8, 6, 3}));
  Tensor p = nn::MaxPool2d({.window = 2})(c), q = nn::AvgPool2d({.window = 3, .stride = 1})(c);
  resolve_shapes({a, b, c, p, q});
  EXPECT_EQ(a.dims(), (Dims{2, 4, 3, 4}));  // ceil(8 / 2), ceil(6 / 2), out_channels
  EXPECT_EQ(b.dims(), (Dims{2, 4, 2, 2}));  // 8 - 2 * (3 - 1), 6 - 2 * (3 - 1)
  EXPECT_EQ(c.dims(), (Dims{2, 8, 6, 5}));
  EXPECT_EQ(p.dims(), (Dims{2, 4, 3, 5}));
  EXPECT_EQ(q.dims(), (Dims{2, 6, 4, 5}));
}

TEST_F(ConvBlocks, RejectsNonPositiveSizes) {
  try {
    nn::Conv2d conv("conv", {.in_channels = 3, .out_channels = 4, .stride = 0});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d 'conv': in_channels, out_channels, kernel, stride and dilation must be > 0"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(nn::DepthwiseSeparableConv2d("ds", {.in_channels = 0, .out_channels = 4}), RuntimeUsageError);
}

}  // namespace
}  // namespace cannl
