// Every gradient rule against central finite differences in f64, through the C backend and the
// reference interpreter (the acceptance test of the tensors issue). Compiled into test_gpu as
// well (CANNL_TEST_GPU), where it runs on the GPU backend of tests/gpu/gpu_test_util.h only.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/tensor.h"
#include "gradient_check.h"
#include "tensor/compile_util.h"
#include "tensor/fresh_tensors.h"
#ifdef CANNL_TEST_GPU
#include "gpu/gpu_test_util.h"
#endif

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;
using Builder = std::function<Tensor(std::vector<Tensor>& params)>;

struct GradCase {
  std::string name;
  Builder build;
  double low, high;  // parameter values are drawn from [low, high)
};

Tensor p(std::vector<Tensor>& params, const std::string& name, Dims output, Dims input = {}) {
  params.push_back(param(name, {.input = input, .output = output}));
  return params.back();
}

class Gradient : public testing::TestWithParam<std::tuple<GradCase, std::string>> {
 protected:
  testing_util::FreshTensors fresh_{"f64"};
};

TEST_P(Gradient, MatchesCentralFiniteDifferences) {
  const auto& [c, backend] = GetParam();
  std::vector<Tensor> params;
  Tensor loss = sum(c.build(params));
#ifdef CANNL_TEST_GPU
  if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
  auto ctx = runtime::Context(gpu_test::backend());
#else
  auto ctx = backend == "cc" ? runtime::Context::cpu() : runtime::Context::interpreter();
#endif
  testing_util::expect_gradients_match(ctx, loss, params, c.name + " on " + backend,
                                       {.low = c.low, .high = c.high, .static_value = 1});
}

std::vector<GradCase> cases() {
  auto unary = [](std::string name, Tensor (*f)(const Tensor&), double lo, double hi) {
    return GradCase{name, [f](std::vector<Tensor>& ps) { return f(p(ps, "x", {2, 3})); }, lo, hi};
  };
  auto binary = [](std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f,
                   double lo, double hi) {
    return GradCase{name,
                    [f](std::vector<Tensor>& ps) { return f(p(ps, "x", {2, 3}), p(ps, "y", {2, 3})); },
                    lo, hi};
  };
  return {
      unary("neg", [](const Tensor& x) { return neg(x); }, -2, 2),
      unary("relu", [](const Tensor& x) { return relu(x); }, 0.1, 2),
      unary("relu_negative", [](const Tensor& x) { return relu(x); }, -2, -0.1),
      unary("tanh", [](const Tensor& x) { return tanh(x); }, -2, 2),
      unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }, -2, 2),
      unary("exp", [](const Tensor& x) { return exp(x); }, -2, 2),
      unary("log", [](const Tensor& x) { return log(x); }, 0.5, 3),
      unary("sqrt", [](const Tensor& x) { return sqrt(x); }, 0.5, 3),
      unary("sin", [](const Tensor& x) { return sin(x); }, -3, 3),
      unary("cos", [](const Tensor& x) { return cos(x); }, -3, 3),
      unary("recip", [](const Tensor& x) { return recip(x); }, 0.5, 2),
      unary("square", [](const Tensor& x) { return pow(x, 2.0); }, -2, 2),
      unary("pow_2_5", [](const Tensor& x) { return pow(x, 2.5); }, 0.5, 2),
      binary("add", [](const Tensor& x, const Tensor& y) { return x + y; }, -2, 2),
      binary("sub", [](const Tensor& x, const Tensor& y) { return x - y; }, -2, 2),
      binary("pointmul", [](const Tensor& x, const Tensor& y) { return pointmul(x, y); }, -2, 2),
      binary("div", [](const Tensor& x, const Tensor& y) { return x / y; }, 0.5, 2),
      binary("max", [](const Tensor& x, const Tensor& y) { return max(x, y); }, -2, 2),
      binary("min", [](const Tensor& x, const Tensor& y) { return min(x, y); }, -2, 2),
      binary("where", [](const Tensor& x, const Tensor& y) { return where(lt(x, y), x, pointmul(y, y)); }, -2, 2),
      binary("chain", [](const Tensor& x, const Tensor& y) { return tanh(pointmul(x, y) + exp(x)); }, -1, 1),
      {"matmul", [](std::vector<Tensor>& ps) { return p(ps, "w", {2}, {3}) * p(ps, "v", {3}, {4}); }, -1, 1},
      {"matmul_bias_relu", [](std::vector<Tensor>& ps) {
         return relu(p(ps, "w", {4}, {3}) * p(ps, "v", {3}) + p(ps, "b", {4})); }, 0.1, 1},
      {"broadcast_add", [](std::vector<Tensor>& ps) { return p(ps, "x", {2, 3}) + p(ps, "b", {3}); }, -1, 1},
      {"transpose", [](std::vector<Tensor>& ps) { return pointmul(transpose(p(ps, "w", {2}, {3})), p(ps, "v", {3}, {2})); }, -1, 1},
      {"einsum", [](std::vector<Tensor>& ps) { return einsum("ij;jk=>ik", p(ps, "a", {2, 3}), p(ps, "b", {3, 4})); }, -1, 1},
      {"mean", [](std::vector<Tensor>& ps) { return pointmul(mean(p(ps, "x", {2, 3})), p(ps, "s", {1})); }, -1, 1},
      {"max_all", [](std::vector<Tensor>& ps) { return max(p(ps, "x", {2, 3})); }, -1, 1},
      {"slice_batch", [](std::vector<Tensor>& ps) {
         ir::StaticSymbol row{ir::fresh_symbol(), 3, "row"};
         Tensor x = param("x", {.input = Dims{}, .output = Dims{3, 2}});
         ps.push_back(x);
         // A param has no batch axes: move its leading output axis to the batch row first.
         return pow(slice_batch(einsum("r i => r|i", x), row), 2.0); }, -1, 1},
      {"einmax_product", [](std::vector<Tensor>& ps) {
         return einmax("ij;jk=>ik", p(ps, "a", {2, 3}), p(ps, "b", {3, 2})); }, 0.1, 1},
      {"sum_rows", [](std::vector<Tensor>& ps) { return pow(sum(p(ps, "x", {2, 3}), "ij => i"), 2.0); }, -1, 1},
      // A mean over a diagonal divides by the iterations summed (1), not by elements per cell (3).
      {"mean_diagonal", [](std::vector<Tensor>& ps) { return pow(mean(p(ps, "x", {3, 3}), "ii => i"), 2.0); }, -1, 1},
      // A concatenation block after the first that sums over an axis of its operand.
      {"concat_summing_block", [](std::vector<Tensor>& ps) {
         return pow(concat("k;i,j=>k^i", {p(ps, "k", {2}), p(ps, "x", {2, 3})}), 2.0); }, -1, 1},
  };
}

// ---- points where a rule's general formula breaks down (values chosen, not drawn) ----

/// The gradients of `params` (set to `values`) of `loss` on the reference interpreter.
std::vector<std::vector<double>> gradients_at(const Tensor& loss, const std::vector<Tensor>& params,
                                              const std::vector<std::vector<double>>& values) {
#ifdef CANNL_TEST_GPU
  auto ctx = runtime::Context(gpu_test::backend());
#else
  auto ctx = runtime::Context::interpreter();
#endif
  auto routine = ctx.compile(grad_update_code(loss), "grad_at");
  testing_util::upload_literals(ctx, {loss});
  for (std::size_t k = 0; k < params.size(); ++k) ctx.set_values(params[k].value(), values[k]);
  ctx.run(routine);
  std::vector<std::vector<double>> out;
  for (const auto& p : params) out.push_back(ctx.get_values(p.grad()));
  return out;
}

class GradientAt : public testing::Test {
 protected:
  void SetUp() override {
#ifdef CANNL_TEST_GPU
    if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
#endif
  }
  testing_util::FreshTensors fresh_{"f64"};
};

TEST_F(GradientAt, PowWithExponentZeroHasAZeroGradientAlsoAtZero) {
  // x^0 = 1 everywhere: the general rule g * 0 * x^-1 gave 0 * inf = NaN at x = 0.
  Tensor x = param("x", {.input = Dims{}, .output = Dims{3}});
  EXPECT_EQ(gradients_at(sum(pow(x, 0.0)), {x}, {{0, 1, -2}}).at(0), (std::vector<double>{0, 0, 0}));
}

TEST_F(GradientAt, EinmaxOfNarrowProductsSendsTheGradientToTheMaximum) {
  // max_j a_j * b_j with a = b = {1 + 2^-7, 0.5}: the maximum is j = 0, but its product
  // 1 + 2^-6 + 2^-14 rounds in an f16 or bf16 result, and the rule compared that t with the
  // unrounded f32 product: no cell matched and both gradients were {0, 0}. fp8 (2 mantissa bits)
  // rounds 1.25 * 1.25 = 1.5625 to 1.5.
  for (ir::DType dtype : {ir::DType::F16, ir::DType::BF16, ir::DType::FP8}) {
    const double v = dtype == ir::DType::FP8 ? 1.25 : 1 + std::ldexp(1.0, -7);
    reset_tensor_state();
    Tensor x = param("x", {.input = Dims{}, .output = Dims{1, 2}, .dtype = dtype});
    Tensor y = param("y", {.input = Dims{}, .output = Dims{2, 1}, .dtype = dtype});
    const auto grads = gradients_at(sum(einmax("ij;jk=>ik", x, y)), {x, y}, {{v, 0.5}, {v, 0.5}});
    EXPECT_EQ(grads.at(0), (std::vector<double>{v, 0})) << ir::dtype_name(dtype);
    EXPECT_EQ(grads.at(1), (std::vector<double>{v, 0})) << ir::dtype_name(dtype);
  }
}

// test_gpu runs the cases on its GPU backend only; test_tensor on the C backend and the interpreter.
std::vector<std::string> backends_under_test() {
#ifdef CANNL_TEST_GPU
  return {"gpu"};
#else
  return {"cc", "interpreter"};
#endif
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, Gradient,
    testing::Combine(testing::ValuesIn(cases()), testing::ValuesIn(backends_under_test())),
    [](const testing::TestParamInfo<Gradient::ParamType>& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace cannl
