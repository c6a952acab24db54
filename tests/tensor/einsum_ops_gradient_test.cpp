// The einsum-built operations (convolutions, pooling, concatenation, diagonal, trace, tropical,
// einsum3, min accumulation): forward values against hand / host computations, gradients against
// central finite differences in f64 on the C backend and the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/tensor.h"
#include "gradient_check.h"
#include "tensor/compile_util.h"
#include "tensor/fresh_tensors.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;
using Values = std::vector<double>;

class EinsumOps : public testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f64"};

  Values evaluate(const Tensor& t, const std::string& backend = "interpreter") {
    auto ctx = backend == "cc" ? runtime::Context::cpu() : runtime::Context::interpreter();
    auto routine = testing_util::compile_forward(ctx, {t}, "evaluate");
    ctx.run(routine);
    return ctx.get_values(t.value());
  }
};

Values iota(std::int64_t n, double start = 0) {
  Values v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<double>(i));
  return v;
}

Tensor vec(const std::string& name, Values v, Dims out) {
  return literal(name, std::move(v), {.batch = Dims{}, .input = Dims{}, .output = out});
}

TEST_F(EinsumOps, Conv1dValidMatchesHost) {
  Tensor x = literal("x", iota(10), {.batch = Dims{}, .input = Dims{}, .output = Dims{5, 2}});
  Tensor w = literal("w", {1, 0, 0, 1, 1, 1}, {.batch = Dims{}, .input = Dims{3, 2}, .output = Dims{1}});
  Tensor y = conv1d(x, w);
  EXPECT_EQ(y.dims(), (Dims{3, 1}));
  // y[o] = x[o,0] + x[o+1,1] + x[o+2,0] + x[o+2,1]
  EXPECT_EQ(evaluate(y), (Values{0 + 3 + 4 + 5, 2 + 5 + 6 + 7, 4 + 7 + 8 + 9}));
}

TEST_F(EinsumOps, Conv1dPaddedStride2Dilation2) {
  Tensor x = literal("x", iota(8, 1), {.batch = Dims{}, .input = Dims{}, .output = Dims{8, 1}});
  Tensor w = literal("w", {1, 10, 100}, {.batch = Dims{}, .input = Dims{3, 1}, .output = Dims{1}});
  Tensor y = conv1d(x, w, {.stride = 2, .dilation = 2, .padding = true});
  EXPECT_EQ(y.dims(), (Dims{4, 1}));
  // reads x[2o + 2k - 2]; x[i] = i + 1, out of range = 0
  Values expected;
  for (int o = 0; o < 4; ++o) {
    double s = 0;
    for (int k = 0; k < 3; ++k) {
      const int i = 2 * o + 2 * k - 2;
      if (i >= 0 && i < 8) s += (i + 1) * std::pow(10.0, k);
    }
    expected.push_back(s);
  }
  EXPECT_EQ(evaluate(y), expected);
  EXPECT_EQ(evaluate(y, "cc"), expected);
}

TEST_F(EinsumOps, Conv2dPaddedSameSize) {
  Tensor x = literal("x", iota(9), {.batch = Dims{}, .input = Dims{}, .output = Dims{3, 3, 1}});
  Tensor w = literal("w", Values(9, 1.0), {.batch = Dims{}, .input = Dims{3, 3, 1}, .output = Dims{1}});
  Tensor y = conv2d(x, w, {.padding = true});
  EXPECT_EQ(y.dims(), (Dims{3, 3, 1}));
  // 3x3 box sums with zero padding
  EXPECT_EQ(evaluate(y), (Values{8, 15, 12, 21, 36, 27, 20, 33, 24}));
}

TEST_F(EinsumOps, MaxPool2d) {
  Tensor x = literal("x", {1, 5, 2, 0, 3, 4, 8, 1, 0, 9, 2, 2, 7, 6, 3, 1},
                     {.batch = Dims{}, .input = Dims{}, .output = Dims{4, 4, 1}});
  Tensor y = max_pool2d(x, 2);
  EXPECT_EQ(y.dims(), (Dims{2, 2, 1}));
  EXPECT_EQ(evaluate(y), (Values{5, 8, 9, 3}));
}

TEST_F(EinsumOps, AvgPool2d) {
  Tensor x = literal("x", iota(16), {.batch = Dims{}, .input = Dims{}, .output = Dims{4, 4, 1}});
  EXPECT_EQ(evaluate(avg_pool2d(x, 2)), (Values{2.5, 4.5, 10.5, 12.5}));
}

TEST_F(EinsumOps, ConcatAlongLeadingAxis) {
  Tensor a = vec("a", {1, 2, 3, 4}, {2, 2});
  Tensor b = vec("b", {5, 6}, {1, 2});
  Tensor c = concat({a, b});
  EXPECT_EQ(c.dims(), (Dims{3, 2}));
  EXPECT_EQ(evaluate(c), (Values{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(evaluate(c, "cc"), (Values{1, 2, 3, 4, 5, 6}));
}

TEST_F(EinsumOps, ConcatAlongTrailingAxis) {
  Tensor a = vec("a", {1, 2, 3, 4}, {2, 2});
  Tensor b = vec("b", {5, 6}, {2, 1});
  Tensor c = concat("i, a; i, b => i, a^b", {a, b});
  EXPECT_EQ(evaluate(c), (Values{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(evaluate(c, "cc"), (Values{1, 2, 5, 3, 4, 6}));
}

TEST_F(EinsumOps, StackVectors) {
  Tensor s = stack({vec("a", {1, 2, 3}, {3}), vec("b", {4, 5, 6}, {3})});
  EXPECT_EQ(s.dims(), (Dims{2, 3}));
  EXPECT_EQ(evaluate(s), (Values{1, 2, 3, 4, 5, 6}));
}

TEST_F(EinsumOps, ShiftAndPad) {
  EXPECT_EQ(evaluate(concat("1^i => i", {vec("x", {1, 2, 3, 4}, {4})})), (Values{2, 3, 4}));
  EXPECT_EQ(evaluate(concat("i => 1^i", {vec("y", {1, 2, 3}, {3})})), (Values{0, 1, 2, 3}));
}

TEST_F(EinsumOps, ConcatWithAnEmptyPart) {
  // The empty part's block keeps its loop of no iteration; a fixed index 0 read a cell it lacks.
  for (const std::string backend : {"interpreter", "cc"}) {
    EXPECT_EQ(evaluate(concat({vec("a", {}, {0, 2}), vec("b", {5, 6}, {1, 2})}), backend), (Values{5, 6}));
    EXPECT_EQ(evaluate(concat({vec("a", {1, 2}, {1, 2}), vec("b", {}, {0, 2})}), backend), (Values{1, 2}));
  }
}

TEST_F(EinsumOps, ReductionsOverAnEmptyAxisGiveTheNeutralElement) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const std::string backend : {"interpreter", "cc"}) {
    EXPECT_EQ(evaluate(einsum("ij=>i", vec("x", {}, {2, 0})), backend), (Values{0, 0}));
    EXPECT_EQ(evaluate(einmax("ij=>i", vec("x", {}, {2, 0})), backend), (Values{-inf, -inf}));
    EXPECT_EQ(evaluate(einmin("ij=>i", vec("x", {}, {2, 0})), backend), (Values{inf, inf}));
  }
}

TEST_F(EinsumOps, DiagonalTraceOuterBatchedMatmul) {
  Tensor m = vec("m", iota(9), {3, 3});
  EXPECT_EQ(evaluate(diagonal(m)), (Values{0, 4, 8}));
  EXPECT_EQ(evaluate(trace(m)), (Values{12}));
  EXPECT_EQ(evaluate(outer(vec("u", {1, 2}, {2}), vec("v", {3, 4, 5}, {3}))), (Values{3, 4, 5, 6, 8, 10}));
  Tensor a = literal("a", iota(8), {.batch = Dims{2}, .input = Dims{}, .output = Dims{2, 2}});
  Tensor b = literal("b", {1, 0, 0, 1, 0, 1, 1, 0}, {.batch = Dims{2}, .input = Dims{}, .output = Dims{2, 2}});
  EXPECT_EQ(evaluate(batched_matmul(a, b)), (Values{0, 1, 2, 3, 5, 4, 7, 6}));
}

TEST_F(EinsumOps, TropicalEinsum3Einmin) {
  Tensor a = vec("a", {0, 1, 2, 3}, {2, 2});
  Tensor b = vec("b", {1, 5, 2, 0}, {2, 2});
  EXPECT_EQ(evaluate(tropical("ij;jk=>ik", a, b)), (Values{3, 5, 5, 7}));
  Tensor c = vec("c", {1, 2}, {2});
  EXPECT_EQ(evaluate(einsum3("i;i;i=> |->", c, c, c)), (Values{9}));
  EXPECT_EQ(evaluate(einmin("ij=>i", vec("x", {3, 1, 2, 0, 5, 4}, {2, 3}))), (Values{1, 0}));
}

// ---- gradients ----

using Builder = std::function<Tensor(std::vector<Tensor>&)>;
struct GradCase {
  std::string name;
  Builder build;
};

Tensor p(std::vector<Tensor>& params, const std::string& name, Dims output, Dims input = {}) {
  params.push_back(param(name, {.input = input, .output = output}));
  return params.back();
}

class EinsumGradient : public testing::TestWithParam<std::tuple<GradCase, std::string>> {
 protected:
  testing_util::FreshTensors fresh_{"f64"};
};

TEST_P(EinsumGradient, MatchesCentralFiniteDifferences) {
  const auto& [c, backend] = GetParam();
  std::vector<Tensor> params;
  Tensor out = c.build(params);
  // A weighted sum so that every output cell has a distinct sensitivity.
  Tensor loss = sum(pointmul(out, pow(out, 2.0) + 1.0));
  auto ctx = backend == "cc" ? runtime::Context::cpu() : runtime::Context::interpreter();
  testing_util::expect_gradients_match(ctx, loss, params, c.name + " on " + backend);
}

std::vector<GradCase> cases() {
  return {
      {"conv1d_valid", [](auto& ps) { return conv1d(p(ps, "x", {6, 2}), p(ps, "w", {2}, {3, 2})); }},
      {"conv1d_padded_stride2_dilation2", [](auto& ps) {
         return conv1d(p(ps, "x", {8, 1}), p(ps, "w", {2}, {3, 1}), {.stride = 2, .dilation = 2, .padding = true}); }},
      {"conv2d_padded", [](auto& ps) { return conv2d(p(ps, "x", {4, 4, 1}), p(ps, "w", {2}, {3, 3, 1}), {.padding = true}); }},
      {"conv2d_stride2", [](auto& ps) { return conv2d(p(ps, "x", {5, 5, 2}), p(ps, "w", {1}, {3, 3, 2}), {.stride = 2}); }},
      {"max_pool2d", [](auto& ps) { return max_pool2d(p(ps, "x", {4, 4, 1}), 2); }},
      {"avg_pool2d", [](auto& ps) { return avg_pool2d(p(ps, "x", {4, 4, 2}), 2); }},
      {"concat", [](auto& ps) { return concat({p(ps, "a", {2, 3}), p(ps, "b", {1, 3})}); }},
      // Regression: GCC 12 -O3 -march=native miscompiled this backward code (SLP vectorization)
      // until the cc backend's toolchain workarounds.
      {"concat_trailing", [](auto& ps) { return concat("i, a; i, b => i, a^b", {p(ps, "a", {2, 3}), p(ps, "b", {2, 1})}); }},
      {"stack", [](auto& ps) { return stack({p(ps, "a", {3}), p(ps, "b", {3})}); }},
      {"shift", [](auto& ps) { return concat("1^i => i", {p(ps, "x", {4})}); }},
      {"pad", [](auto& ps) { return concat("i => 1^i", {p(ps, "x", {3})}); }},
      {"diagonal", [](auto& ps) { return diagonal(p(ps, "m", {3, 3})); }},
      {"trace", [](auto& ps) { return trace(p(ps, "m", {3, 3})); }},
      {"outer", [](auto& ps) { return outer(p(ps, "u", {2}), p(ps, "v", {3})); }},
      {"batched_matmul", [](auto& ps) { return batched_matmul(p(ps, "a", {2, 2, 3}), p(ps, "b", {2, 3, 2})); }},
      {"tropical", [](auto& ps) { return tropical("ij;jk=>ik", p(ps, "a", {2, 3}), p(ps, "b", {3, 2})); }},
      {"einsum3", [](auto& ps) { return einsum3("ij;jk;kl=>il", p(ps, "a", {2, 2}), p(ps, "b", {2, 3}), p(ps, "c", {3, 2})); }},
      {"einmin", [](auto& ps) { return einmin("ij=>i", p(ps, "x", {2, 3})); }},
  };
}

TEST_F(EinsumOps, TropicalOfNarrowSumsSendsTheGradientToTheMaximum) {
  // max_j a_j + b_j with a = {1 + 2^-7, 0}, b = {2^-15, 0}: the maximum is j = 0, but its sum
  // rounds in an f16, bf16 or fp8 result (fp8: a_0 = 1.25, the nearest to 1.25 + 2^-15 with 2
  // mantissa bits), and the rule compared that t with the unrounded f32 sum: no cell matched and
  // both gradients were {0, 0}.
  for (ir::DType dtype : {ir::DType::F16, ir::DType::BF16, ir::DType::FP8}) {
    const double a0 = dtype == ir::DType::FP8 ? 1.25 : 1 + std::ldexp(1.0, -7);
    reset_tensor_state();
    Tensor a = param("a", {.input = Dims{}, .output = Dims{1, 2}, .dtype = dtype});
    Tensor b = param("b", {.input = Dims{}, .output = Dims{2, 1}, .dtype = dtype});
    Tensor loss = sum(tropical("ij;jk=>ik", a, b));
    for (auto ctx : {runtime::Context::interpreter(), runtime::Context::cpu()}) {
      auto routine = ctx.compile(grad_update_code(loss), "grad");
      ctx.set_values(a.value(), Values{a0, 0});
      ctx.set_values(b.value(), Values{std::ldexp(1.0, -15), 0});
      ctx.run(routine);
      EXPECT_EQ(ctx.get_values(a.grad()), (Values{1, 0})) << ir::dtype_name(dtype);
      EXPECT_EQ(ctx.get_values(b.grad()), (Values{1, 0})) << ir::dtype_name(dtype);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EinsumOps, EinsumGradient,
    testing::Combine(testing::ValuesIn(cases()), testing::Values(std::string("cc"), std::string("interpreter"))),
    [](const testing::TestParamInfo<EinsumGradient::ParamType>& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace cannl
