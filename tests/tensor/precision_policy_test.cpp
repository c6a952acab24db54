// The precision policy of sums of products: operands rounded to bf16 / f16 / tf32 before the
// multiply, exact products summed in f32. A product of two such values is exact in f32 (at most
// 2 x 11 significant bits), so on the unscheduled routine the result is bitwise a sequential f32
// sum of the host-rounded products: the oracle below. It differs from the f32 result, so a
// missing rounding fails the test.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/float_codecs.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/precision_policy.h"
#include "cannl/tensor/tensor.h"
#include "tensor/compile_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

constexpr std::int64_t kRows = 3, kSteps = 24, kCols = 5;

class PrecisionPolicyTest : public testing::Test {
 protected:
  void SetUp() override { reset_tensor_state(); }
  void TearDown() override { config::clear_overrides(); }
};

/// Values with full f32 mantissas (none lies on the bf16, f16 or tf32 grid), in (-2, 2).
std::vector<double> full_mantissas(std::size_t n, std::uint32_t seed) {
  std::vector<double> v(n);
  std::uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<double>(static_cast<float>((static_cast<double>(s >> 8) / 8388608.0 - 1.0) * 1.9 +
                                               0x1p-20));
  }
  return v;
}

float round_as(MatmulPrecision p, float x) {
  switch (p) {
    case MatmulPrecision::F32: return x;
    case MatmulPrecision::BF16: return round_to_bf16(x);
    case MatmulPrecision::F16: return round_to_f16(x);
    case MatmulPrecision::TF32: return round_to_tf32(x);
  }
  return x;
}

/// c[i, j] = sum_k a[i, k] b[k, j], each factor rounded as `p`, summed in f32 in k order.
std::vector<double> oracle(MatmulPrecision p, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c;
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t j = 0; j < kCols; ++j) {
      float acc = 0;
      for (std::int64_t k = 0; k < kSteps; ++k)
        acc += round_as(p, static_cast<float>(a[static_cast<std::size_t>(i * kSteps + k)])) *
               round_as(p, static_cast<float>(b[static_cast<std::size_t>(k * kCols + j)]));
      c.push_back(acc);
    }
  return c;
}

struct Product {
  Tensor a, b, c;
};

/// c = a * b for a [rows <- steps] and b [steps <- cols] literals (f32), under the current policy.
Product matmul_under_current_policy() {
  Product p;
  p.a = literal("a", full_mantissas(kRows * kSteps, 1),
                {.batch = Dims{}, .input = Dims{kSteps}, .output = Dims{kRows}, .dtype = ir::DType::F32});
  p.b = literal("b", full_mantissas(kSteps * kCols, 2),
                {.batch = Dims{}, .input = Dims{kCols}, .output = Dims{kSteps}, .dtype = ir::DType::F32});
  p.c = p.a * p.b;
  return p;
}

std::vector<double> evaluate(runtime::Context ctx, const Tensor& t, const std::string& name) {
  auto routine = testing_util::compile_forward(ctx, {t}, name);
  ctx.run(routine);
  return ctx.get_values(t.value());
}

TEST_F(PrecisionPolicyTest, RoundedOperandsSumExactlyAsTheOracle) {
  config::set_override("cpu_schedule_reassociate", "false");  // k order on the cc backend too
  Product f32 = matmul_under_current_policy();
  const auto plain = evaluate(runtime::Context::interpreter(), f32.c, "f32_product");
  ASSERT_EQ(plain.size(), static_cast<std::size_t>(kRows * kCols));
  for (MatmulPrecision p : {MatmulPrecision::BF16, MatmulPrecision::F16, MatmulPrecision::TF32}) {
    PrecisionScope scope(PrecisionPolicy{p});
    Product mixed = matmul_under_current_policy();
    const std::string name(PrecisionPolicy{p}.name());
    const auto want = oracle(p, *f32.a.impl().host_values, *f32.b.impl().host_values);
    for (auto ctx : {runtime::Context::interpreter(), runtime::Context::cpu()}) {
      const auto got = evaluate(ctx, mixed.c, name + "_product");
      EXPECT_EQ(got, want) << name;
      EXPECT_NE(got, plain) << name << ": the operands were not rounded";
    }
  }
}

TEST_F(PrecisionPolicyTest, PolicyComesFromTheScopeElseTheConfigKey) {
  EXPECT_EQ(current_precision_policy(), PrecisionPolicy{});
  config::set_override("precision", "tf32");
  EXPECT_EQ(current_precision_policy().matmul, MatmulPrecision::TF32);
  {
    PrecisionScope outer(PrecisionPolicy{MatmulPrecision::BF16});
    {
      PrecisionScope inner(PrecisionPolicy{MatmulPrecision::F16});
      EXPECT_EQ(current_precision_policy().matmul, MatmulPrecision::F16);
    }
    EXPECT_EQ(current_precision_policy().matmul, MatmulPrecision::BF16);
  }
  EXPECT_EQ(current_precision_policy().matmul, MatmulPrecision::TF32);
  config::set_override("precision", "half");
  try {
    current_precision_policy();
    ADD_FAILURE() << "precision=half must be a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("one of f32, bf16, f16, tf32"), std::string::npos) << e.what();
  }
}

TEST_F(PrecisionPolicyTest, TheContractionKeepsThePolicyItWasBuiltWith) {
  Product mixed;
  {
    PrecisionScope scope(PrecisionPolicy{MatmulPrecision::BF16});
    mixed = matmul_under_current_policy();
  }
  EXPECT_EQ(mixed.c.impl().matmul_precision, MatmulPrecision::BF16);
  EXPECT_EQ(precision_summary({mixed.c}), "bf16 (1 sums of products)");
  // Built after the scope ended: f32, and compiling the first one later still rounds it.
  Tensor plain = mixed.a * mixed.b;
  EXPECT_EQ(precision_summary({mixed.c, plain}), "1 f32, 1 bf16");
  const auto got = evaluate(runtime::Context::interpreter(), mixed.c, "late_compile");
  EXPECT_EQ(got, oracle(MatmulPrecision::BF16, *mixed.a.impl().host_values, *mixed.b.impl().host_values));
}

TEST_F(PrecisionPolicyTest, RoundedCopiesKeepTheirOperandsRows) {
  // A weight's rounded copy must not take the batch axes the product broadcasts to (it would be
  // copied once per row of the batch).
  PrecisionScope scope(PrecisionPolicy{MatmulPrecision::BF16});
  Tensor w = param("w", {.output = Dims{4}});
  Tensor x = literal("x", full_mantissas(8 * 3, 3), {.batch = Dims{8}, .input = Dims{}, .output = Dims{3}});
  Tensor y = w * x;
  ASSERT_EQ(y.args().size(), 2u);
  EXPECT_EQ(y.args()[0].label(), "w_bf16");
  EXPECT_EQ(y.args()[0].dims(), w.dims());
  EXPECT_EQ(y.args()[1].dims(), x.dims());
  EXPECT_EQ(y.dims(), (Dims{8, 4}));
}

TEST_F(PrecisionPolicyTest, GeneratedCodeShowsTheRounding) {
  config::set_override("cpu_schedule_reassociate", "false");
  PrecisionScope scope(PrecisionPolicy{MatmulPrecision::BF16});
  Product mixed = matmul_under_current_policy();
  evaluate(runtime::Context::cpu(), mixed.c, "bf16_product_visible");
  std::ifstream in(files::build_dir() / "bf16_product_visible.c");
  ASSERT_TRUE(in) << "no generated C for the routine";
  std::stringstream text;
  text << in.rdbuf();
  // a's rounded copy, named after it, then the product of the copies.
  EXPECT_NE(text.str().find("] = cannl_round_bf16f(a[((i0)*24 + i1)]);"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("a_bf16"), std::string::npos) << text.str();
}

TEST_F(PrecisionPolicyTest, GradientsRoundTheIncomingGradientAndTheOtherFactor) {
  // loss = sum(c) with c = a * b: d loss / d a[i, k] = sum_j 1 * b[k, j], every factor rounded
  // (1 is on every grid), summed in f32 in j order.
  PrecisionScope scope(PrecisionPolicy{MatmulPrecision::BF16});
  Tensor a = param("a", {.input = Dims{kSteps}, .output = Dims{kRows}});
  Tensor b = literal("b", full_mantissas(kSteps * kCols, 2),
                     {.batch = Dims{}, .input = Dims{kCols}, .output = Dims{kSteps}, .dtype = ir::DType::F32});
  Tensor loss = sum(a * b);
  auto ctx = runtime::Context::interpreter();
  testing_util::upload_literals(ctx, {loss});
  const auto a_values = full_mantissas(kRows * kSteps, 1);
  ctx.set_values(a.value(), a_values);
  auto routine = ctx.compile(grad_update_code(loss), "grad");
  ctx.run(routine);
  const auto grad = ctx.get_values(a.grad());
  const auto& bv = *b.impl().host_values;
  for (std::int64_t i = 0; i < kRows; ++i)
    for (std::int64_t k = 0; k < kSteps; ++k) {
      float acc = 0;
      for (std::int64_t j = 0; j < kCols; ++j)
        acc += round_to_bf16(static_cast<float>(bv[static_cast<std::size_t>(k * kCols + j)]));
      EXPECT_EQ(grad[static_cast<std::size_t>(i * kSteps + k)], acc) << i << ", " << k;
    }
}

/// f32 bit patterns where roundings go wrong: each exponent class (subnormal, smallest normal,
/// around 1, largest), low bits at and around the ties of bf16 (16 dropped bits), tf32 (13) and
/// f16's normal range (13), both values of the kept last bit, both signs; the largest finite
/// value, infinities; then pseudo-random patterns.
std::vector<double> hard_patterns() {
  std::vector<std::uint32_t> bits = {0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x00000001u, 0x007fffffu};
  for (std::uint32_t exponent : {0u, 1u, 103u, 112u, 113u, 127u, 142u, 143u, 254u})
    for (std::uint32_t kept : {0u, 1u})
      for (int dropped : {13, 16})
        for (std::uint32_t low : {0u, 1u, 0x7ffu, 0xfffu, 0x1000u, 0x1001u, 0x1fffu, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
          const std::uint32_t mantissa_low = low & ((1u << dropped) - 1u);
          const std::uint32_t m = (kept << dropped) | mantissa_low | (0x5u << 19 & 0x7fffffu);
          for (std::uint32_t sign : {0u, 0x80000000u}) bits.push_back(sign | exponent << 23 | (m & 0x7fffffu));
        }
  std::uint32_t s = 7;
  for (int k = 0; k < 1024; ++k) {
    s = s * 1664525u + 1013904223u;
    if ((s & 0x7f800000u) != 0x7f800000u) bits.push_back(s);  // NaNs are checked on their own
  }
  std::vector<double> out;
  for (auto b : bits) out.push_back(static_cast<double>(std::bit_cast<float>(b)));
  return out;
}

TEST_F(PrecisionPolicyTest, EveryBackendRoundsHardPatternsAsTheCodecs) {
  // c = a * 1 with a one-step contraction: c = fma(round(a), 1, +0) = round(a) (-0 becomes +0).
  const std::vector<double> values = hard_patterns();
  const auto n = static_cast<std::int64_t>(values.size());
  for (MatmulPrecision p : {MatmulPrecision::BF16, MatmulPrecision::F16, MatmulPrecision::TF32}) {
    reset_tensor_state();
    PrecisionScope scope(PrecisionPolicy{p});
    Tensor a = literal("a", values, {.batch = Dims{}, .input = Dims{1}, .output = Dims{n}, .dtype = ir::DType::F32});
    Tensor one = literal("one", {1.0}, {.batch = Dims{}, .input = Dims{}, .output = Dims{1}, .dtype = ir::DType::F32});
    Tensor c = a * one;
    const std::string name(PrecisionPolicy{p}.name());
    for (auto ctx : {runtime::Context::interpreter(), runtime::Context::cpu()}) {
      const auto got = evaluate(ctx, c, name + "_patterns");
      for (std::size_t k = 0; k < values.size(); ++k)
        ASSERT_EQ(got[k], static_cast<double>(round_as(p, static_cast<float>(values[k]))))
            << name << " of " << std::hexfloat << values[k];
    }
  }
  for (double nan : {std::nan(""), -std::nan("")}) {
    EXPECT_TRUE(std::isnan(round_to_bf16(static_cast<float>(nan))));
    EXPECT_TRUE(std::isnan(round_to_tf32(static_cast<float>(nan))));
  }
}

}  // namespace
}  // namespace cannl
