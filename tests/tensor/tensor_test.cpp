// The Tensor API: forward values, shape inference through ops, precision inference, parameter
// initialization and the errors a user's program can hit.
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/op_builder.h"
#include "cannl/tensor/tensor.h"
#include "tensor/compile_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class TensorApi : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }

  /// Computes `t` on the interpreter with the given literal/param values uploaded.
  std::vector<double> evaluate(const Tensor& t, const std::vector<std::pair<Tensor, std::vector<double>>>& inputs = {}) {
    auto ctx = runtime::Context::interpreter();
    auto routine = testing_util::compile_forward(ctx, {t}, "evaluate");
    for (const auto& [leaf, values] : inputs) ctx.set_values(leaf.value(), values);
    ctx.run(routine);
    return ctx.get_values(t.value());
  }
};

template <typename E>
void expect_error(const std::function<void()>& f, const std::string& substring) {
  try {
    f();
    FAIL() << "expected an error containing '" << substring << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos) << e.what();
  }
}

TEST_F(TensorApi, MatmulOfLiteralsMatchesHost) {
  Tensor a = literal("a", {1, 2, 3, 4, 5, 6}, {.input = Dims{3}, .output = Dims{2}});
  Tensor b = literal("b", {1, 0, 2, 1, 0, 3}, {.input = Dims{2}, .output = Dims{3}});
  Tensor c = a * b;
  EXPECT_EQ(c.shape_string(), "2->2");
  // c[i][k] = sum_j a[i][j] b[j][k]
  EXPECT_EQ(evaluate(c), (std::vector<double>{5, 11, 14, 23}));
}

TEST_F(TensorApi, BroadcastingBiasAndReductions) {
  Tensor x = literal("x", {1, 2, 3, 4, 5, 6}, {.batch = Dims{2}, .output = Dims{3}});
  Tensor b = literal("b", {10, 20, 30}, {.output = Dims{3}});
  EXPECT_EQ(evaluate(x + b), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(evaluate(sum(x)), (std::vector<double>{21}));
  EXPECT_EQ(evaluate(mean(x)), (std::vector<double>{3.5}));
  EXPECT_EQ(evaluate(max(x)), (std::vector<double>{6}));
  EXPECT_EQ(evaluate(sum(x, "...|...->c => ...|...->")), (std::vector<double>{6, 15}));
  EXPECT_EQ(evaluate(max(x, "...|...->c => ...|...->")), (std::vector<double>{3, 6}));
  EXPECT_EQ(evaluate(einsum("b|i => i", x)), (std::vector<double>{5, 7, 9}));
}

TEST_F(TensorApi, AMeanDividesByTheIterationsSummedIntoEachCell) {
  Tensor m = literal("m", {0, 1, 2, 3, 4, 5, 6, 7, 8}, {.output = Dims{3, 3}});
  EXPECT_EQ(evaluate(mean(m, "ii => i")), (std::vector<double>{0, 4, 8}));  // the diagonal itself
  Tensor a = literal("a", {0, 1, 2, 3, 4, 5}, {.output = Dims{3, 2}});
  EXPECT_EQ(evaluate(mean(a, "i0 => i")), (std::vector<double>{0, 2, 4}));  // a fixed index sums nothing
  EXPECT_EQ(evaluate(mean(a, "ij => i")), (std::vector<double>{0.5, 2.5, 4.5}));
  Tensor v = literal("v", {0, 1, 2, 3, 4, 5}, {.output = Dims{6}});
  EXPECT_EQ(evaluate(mean(v, "2*i => i")), (std::vector<double>{0, 2, 4}));  // a stride skips cells
}

TEST_F(TensorApi, AConcatenationBlockAfterTheFirstSumsWhatItReduces) {
  Tensor k = literal("k", {0, 1}, {.output = Dims{2}});
  Tensor x = literal("x", {0, 1, 2, 3, 4, 5}, {.output = Dims{2, 3}});
  // Block 0 copies k; block 1 sums x's rows: the cells of block 1 are 0+1+2 and 3+4+5.
  EXPECT_EQ(evaluate(concat("k;i,j=>k^i", {k, x})), (std::vector<double>{0, 1, 3, 12}));
  EXPECT_EQ(evaluate(concat("i,j;k=>i^k", {x, k})), (std::vector<double>{3, 12, 0, 1}));
}

TEST_F(TensorApi, OnlyConcatTakesAConcatenationSpec) {
  // Any other op computes a single block: it would read one operand and leave cells unwritten.
  Tensor p = literal("p", {0, 1}, {.output = Dims{2}});
  Tensor q = literal("q", {0, 1, 2}, {.output = Dims{3}});
  expect_error<EinsumSyntaxError>([&] { (void)einsum("a;b=>a^b", p, q); }, "needs concat");
  expect_error<EinsumSyntaxError>([&] { (void)sum(q, "a^b=>b"); }, "einsum cannot take the concatenation spec");
  expect_error<EinsumSyntaxError>([&] { (void)mean(q, "a^b=>a"); }, "mean cannot take");
  expect_error<EinsumSyntaxError>([&] { (void)einmax("i,j=>i^j", q); }, "needs concat");
  EXPECT_EQ(evaluate(concat("a;b=>a^b", {p, q})), (std::vector<double>{0, 1, 0, 1, 2}));
}

TEST_F(TensorApi, GivenSizesAreCheckedBeforeTheyAreMultiplied) {
  // 2^32 * 2^32 wrapped to 0 and 2^62 * 4 to 0: an empty value list passed the count check.
  const std::int64_t big = std::int64_t{1} << 32;
  expect_error<ShapeError>([&] { (void)literal("x", {1, 2, 3, 4}, {.output = Dims{big, big, 1}}); }, "size overflow");
  expect_error<ShapeError>([&] { (void)literal("y", {}, {.output = Dims{std::int64_t{1} << 62, 4}}); }, "size overflow");
  expect_error<ShapeError>([&] { (void)literal("z", {1}, {.output = Dims{-1}}); }, "its output row has the size -1");
  expect_error<ShapeError>([&] { (void)param("w", {.input = Dims{-3}}); }, "'w': its input row has the size -3");
}

// The C compiler rewrites pow with a literal exponent (GCC and clang: pow(x, -1.0) into 1.0 / x,
// even at -O0), while the interpreter calls libm's pow, which rounds 1 / x otherwise for about
// 6 in 10^4 floats. The cc backend compiles with -fno-builtin-pow(f), so a literal exponent, a
// run-time one and the interpreter all compute libm's bits.
TEST_F(TensorApi, PowComputesTheInterpretersBitsOnTheCBackend) {
  std::vector<double> xs(20000);
  std::uint32_t state = 12345;
  for (auto& x : xs) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(0.25 + 4.0 * (state >> 8) / 16777216.0) * ((state & 1) ? 1.0 : -1.0);
  }
  for (const double e : {-1.0, 2.0, 0.5, 3.0, -2.0}) {
    reset_tensor_state();
    Tensor x = literal("pow_x", xs, {.output = Dims{static_cast<std::int64_t>(xs.size())}});
    Tensor y = pow(x, e);
    auto interp = runtime::Context::interpreter();
    auto cpu = runtime::Context::cpu();
    std::vector<std::vector<double>> results;
    for (auto* ctx : {&interp, &cpu}) {
      auto routine = testing_util::compile_forward(*ctx, {y}, "pow_bits");
      ctx->run(routine);
      results.push_back(ctx->get_values(y.value()));
    }
    std::size_t differing = 0;
    for (std::size_t i = 0; i < xs.size(); ++i)  // pow of a negative x to 0.5: NaN on both
      differing += results[0][i] != results[1][i] && !(std::isnan(results[0][i]) && std::isnan(results[1][i]));
    EXPECT_EQ(differing, 0u) << "pow(x, " << e << "): cells differing from the interpreter";
  }
}

TEST_F(TensorApi, PointwiseOpsAndConstants) {
  Tensor x = literal("x", {-1, 0, 4}, {.output = Dims{3}});
  EXPECT_EQ(evaluate(relu(x)), (std::vector<double>{0, 0, 4}));
  EXPECT_EQ(evaluate(2.0 * x + 1.0), (std::vector<double>{-1, 1, 9}));
  EXPECT_EQ(evaluate(where(lt(x, constant(0.5)), x, neg(x))), (std::vector<double>{-1, 0, -4}));
  EXPECT_EQ(evaluate(gt(x, constant(0))), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(evaluate(range(4)), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(evaluate(pow(x, 2.0)), (std::vector<double>{1, 0, 16}));
}

TEST_F(TensorApi, ShapesAreInferredFromUse) {
  Tensor x = literal("x", std::vector<double>(10), {.batch = Dims{5}, .output = Dims{2}});
  Tensor w = param("w", {.output = Dims{7}});
  Tensor b = param("b");
  Tensor y = w * x + b;
  EXPECT_EQ(w.shape_string(), "2->7");
  EXPECT_EQ(b.shape_string(), "7");
  EXPECT_EQ(y.shape_string(), "5|7");
}

TEST_F(TensorApi, SliceSelectsARuntimeBatchRow) {
  ir::StaticSymbol batch{ir::fresh_symbol(), 3, "batch"};
  Tensor data = literal("data", {1, 2, 3, 4, 5, 6}, {.batch = Dims{3}, .output = Dims{2}});
  Tensor row = slice_batch(data, batch);
  auto ctx = runtime::Context::interpreter();
  auto routine = testing_util::compile_forward(ctx, {row}, "row");
  const std::int64_t two[] = {2};
  ctx.run(routine, two);
  EXPECT_EQ(ctx.get_values(row.value()), (std::vector<double>{5, 6}));
  const std::int64_t out_of_range[] = {3};
  EXPECT_THROW(ctx.run(routine, out_of_range), RuntimeUsageError);
}

TEST_F(TensorApi, PrecisionInference) {
  Tensor a = param("a", {.input = Dims{}, .output = Dims{2}, .dtype = ir::DType::F64});
  Tensor b = param("b", {.input = Dims{}, .output = Dims{2}});
  EXPECT_EQ((a + b).value()->dtype, ir::DType::F64);  // promoted
  Tensor h = param("h", {.input = Dims{}, .output = Dims{2}, .dtype = ir::DType::F16});
  EXPECT_EQ((h + 1.0).value()->dtype, ir::DType::F16);  // constants take their consumer's precision
  EXPECT_EQ(b.value()->dtype, ir::DType::F32);           // the default
  config::set_override("default_prec", "bf16");
  EXPECT_EQ(param("c").value()->dtype, ir::DType::BF16);
  config::set_override("default_prec", "f65");
  EXPECT_THROW(param("d"), ConfigError);
}

// A misspelt generator is an error, not the other generator: both give uniform-looking values.
TEST_F(TensorApi, ThePrngVariantIsCryptoOrLightAndNothingElse) {
  EXPECT_EQ(detail::default_prng_op(), ir::Op::ThreefryCrypto);  // the default
  config::set_override("default_prng_variant", "light");
  EXPECT_EQ(detail::default_prng_op(), ir::Op::ThreefryLight);
  config::set_override("default_prng_variant", "cryto");
  try {
    detail::default_prng_op();
    ADD_FAILURE() << "a misspelt variant was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'default_prng_variant' = 'cryto'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected crypto or light"), std::string::npos) << e.what();
  }
}

TEST_F(TensorApi, HeterogeneousOperandsConvert) {
  Tensor a = literal("a", {1.5, 2.25}, {.output = Dims{2}, .dtype = ir::DType::F64});
  Tensor h = literal("h", {0.1, 0.2}, {.output = Dims{2}, .dtype = ir::DType::BF16});
  auto v = evaluate(a + h);
  EXPECT_DOUBLE_EQ(v[0], 1.5 + static_cast<double>(bf16_to_f32(f32_to_bf16(0.1f))));
}

TEST_F(TensorApi, ParameterInitializationIsSeededAndScaled) {
  Tensor w = param("w", {.input = Dims{50}, .output = Dims{40}, .init = {.kind = InitKind::Kaiming}});
  Tensor n = param("n", {.input = Dims{}, .output = Dims{4000}, .init = {.kind = InitKind::Normal, .stddev = 2}});
  auto ctx = runtime::Context::cpu();
  auto init = ctx.compile(init_params_code({w, n}), "init");
  ctx.run(init);
  const auto wv = ctx.get_values(w.value());
  const double bound = std::sqrt(6.0 / 50.0);
  double mean_w = 0;
  for (double v : wv) {
    EXPECT_LE(std::abs(v), bound);
    mean_w += v / static_cast<double>(wv.size());
  }
  EXPECT_NEAR(mean_w, 0.0, 0.02);
  const auto nv = ctx.get_values(n.value());
  double mean = 0, sq = 0;
  for (double v : nv) mean += v / static_cast<double>(nv.size());
  for (double v : nv) sq += (v - mean) * (v - mean) / static_cast<double>(nv.size());
  EXPECT_NEAR(mean, 0.0, 0.15);
  EXPECT_NEAR(std::sqrt(sq), 2.0, 0.15);
  // Same seed and name: same values, in a fresh context too.
  auto ctx2 = runtime::Context::interpreter();
  ctx2.run(ctx2.compile(init_params_code({w}), "init"));
  EXPECT_EQ(ctx2.get_values(w.value()), wv);
}

TEST_F(TensorApi, MismatchedShapesRaiseShapeError) {
  Tensor a = literal("a", {1, 2, 3}, {.output = Dims{3}});
  Tensor b = literal("b", {1, 2, 3, 4}, {.output = Dims{4}});
  expect_error<ShapeError>([&] { (void)(a + b).dims(); }, "mismatch");
}

TEST_F(TensorApi, MalformedSpecRaisesEinsumSyntaxError) {
  Tensor a = literal("a", {1, 2, 3}, {.output = Dims{3}});
  expect_error<EinsumSyntaxError>([&] { (void)einsum("i;i=>i)", a, a); }, "einsum spec");
  expect_error<EinsumSyntaxError>([&] { (void)einsum("ij;jk=>ik", a); }, "expected");
}

TEST_F(TensorApi, HiddenDimensionMustBeSpecified) {
  Tensor x = literal("x", {1, 2, 3}, {.output = Dims{3}});
  Tensor w = param("w");
  expect_error<ShapeError>([&] { (void)(w * x).dims(); }, "forgot to specify the hidden dimension");
}

// One failed inference must not poison the process: an unrelated graph built afterwards
// resolves and runs, while the failed graph keeps saying why it cannot be used.
TEST_F(TensorApi, FailedInferenceLeavesLaterGraphsUsable) {
  Tensor x = literal("x", std::vector<double>(12, 1.0), {.batch = Dims{4}, .output = Dims{3}});
  Tensor y = param("w") * x;
  expect_error<ShapeError>([&] { resolve_shapes({y}); }, "hidden dimension(s) of parameter 'w'");

  Tensor a = literal("a", {1, 2, 3, 4, 5, 6}, {.output = Dims{2, 3}});
  Tensor b = literal("b", {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {.output = Dims{3, 4}});
  Tensor c = einsum("ij;jk=>ik", a, b);
  resolve_shapes({c});
  EXPECT_EQ(c.dims(), (Dims{2, 4}));
  EXPECT_EQ(evaluate(c), (std::vector<double>{6, 3, 3, 3, 15, 6, 6, 6}));

  expect_error<ShapeError>([&] { resolve_shapes({y}); }, "cannot be used");
  expect_error<ShapeError>([&] { (void)(y + c); }, "shape 'matmul' cannot be used");
}

// A mistake in one model does not take down another built alongside it: only the tensors
// linked to the failure (sharing a leaf or an axis with it) fail with it.
TEST_F(TensorApi, FailedInferenceLeavesGraphsBuiltAlongsideUsable) {
  Tensor a = literal("a", {1, 2, 3, 4, 5, 6}, {.output = Dims{2, 3}});
  Tensor b = literal("b", {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {.output = Dims{3, 4}});
  Tensor c = einsum("ij;jk=>ik", a, b);
  Tensor x = literal("x", std::vector<double>(12, 1.0), {.batch = Dims{4}, .output = Dims{3}});
  Tensor y = param("w") * x;
  expect_error<ShapeError>([&] { resolve_shapes({y}); }, "hidden dimension(s) of parameter 'w'");

  EXPECT_EQ(c.dims(), (Dims{2, 4}));
  EXPECT_EQ(evaluate(c), (std::vector<double>{6, 3, 3, 3, 15, 6, 6, 6}));
  expect_error<ShapeError>([&] { (void)y.dims(); }, "cannot be used");
  expect_error<ShapeError>([&] { (void)(x + x); }, "shape 'x' cannot be used");
}

// reset_tensor_state() restarts step and variable ids: a tensor built before it would compile
// with the projections of whichever tensor now has its step id. It is refused by name instead.
TEST_F(TensorApi, TensorFromBeforeResetIsRefused) {
  Tensor x = literal("x", {1, 2, 3, 4, 5, 6}, {.output = Dims{2, 3}});
  Tensor y = einsum("ij=>ji", x);
  EXPECT_EQ(evaluate(y), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  reset_tensor_state();

  Tensor p = literal("p", {1, 2, 3, 4, 5, 6}, {.output = Dims{3, 2}});
  Tensor q = einsum("ij=>ij", p);
  EXPECT_EQ(evaluate(q), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_GT(p.id(), y.id()) << "tensor ids keep counting across resets";

  const std::string stale = "tensor 'einsum' was created before reset_tensor_state()";
  // Compiling checks the graph from its leaves: the first stale tensor met is x.
  expect_error<RuntimeUsageError>([&] { (void)evaluate(y); }, "was created before reset_tensor_state()");
  expect_error<RuntimeUsageError>([&] { (void)y.dims(); }, stale);
  expect_error<RuntimeUsageError>([&] { (void)(y + q); }, stale);
  expect_error<RuntimeUsageError>([&] { (void)sum(x); }, "tensor 'x' was created before reset_tensor_state()");
  EXPECT_EQ(y.partial_shape_string(), "<created before reset_tensor_state()>");
  EXPECT_EQ(evaluate(q), (std::vector<double>{1, 2, 3, 4, 5, 6})) << "the current graph is unaffected";
}

TEST_F(TensorApi, RoutinesNamedLikeLibcFunctionsRun) {
  // Regression: an exported routine `step` was interposed by libc's step() and crashed.
  // Also names <stdlib.h>, <string.h>, <math.h> or <time.h> declare with another type: `exit` failed
  // with "conflicting types for 'exit'".
  for (const char* name : {"step", "index", "exp", "memset", "exit", "strlen", "qsort", "rand", "time", "erff",
                           "int_fast8_t", "INT64_C"}) {
    reset_tensor_state();
    Tensor x = literal("x", {1, 2}, {.output = Dims{2}});
    Tensor y = 2.0 * x;
    auto ctx = runtime::Context::cpu();
    auto routine = testing_util::compile_forward(ctx, {y}, name);
    ctx.run(routine);
    EXPECT_EQ(ctx.get_values(y.value()), (std::vector<double>{2, 4})) << name;
  }
}

TEST_F(TensorApi, StopGradientBlocksTheBackwardPath) {
  // d/dx [x * stop_gradient(exp(x))] treats exp(x) as a constant: the gradient is exp(x).
  config::set_override("default_prec", "f64");
  Tensor x = param("x", {.input = Dims{}, .output = Dims{3}});
  Tensor loss = sum(pointmul(x, stop_gradient(exp(x))));
  auto ctx = runtime::Context::interpreter();
  auto routine = ctx.compile(grad_update_code(loss), "grad");
  ctx.set_values(x.value(), std::vector<double>{-1, 0, 2});
  ctx.run(routine);
  const auto g = ctx.get_values(x.grad());
  EXPECT_DOUBLE_EQ(g[0], std::exp(-1.0));
  EXPECT_DOUBLE_EQ(g[1], 1.0);
  EXPECT_DOUBLE_EQ(g[2], std::exp(2.0));
}

TEST_F(TensorApi, UninitializedParameterIsNamed) {
  Tensor w = param("weights", {.input = Dims{}, .output = Dims{2}});
  Tensor y = relu(w);
  auto ctx = runtime::Context::interpreter();
  auto routine = testing_util::compile_forward(ctx, {y}, "forward");
  expect_error<UninitializedError>([&] { ctx.run(routine); }, "weights");
}

}  // namespace
}  // namespace cannl
