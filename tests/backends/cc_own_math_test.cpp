// cannl's own f32 exp and tanh (ir/own_math.h): the interpreter, the generated scalar C and the
// generated vector C (every width) compute the same bits on 10^7 samples (every kind of float:
// random bit patterns, the range where the functions move, their edges and the specials), and
// the error against the exact result (libm's double functions, rounded) stays within the bound
// cannl/ir/own_math.h states.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backends/run_util.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/own_math.h"

namespace cannl {
namespace {

using namespace ir;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::values_of;

constexpr std::int64_t kSamples = 10'000'000;

// Specials and edges first, then thirds of random bit patterns, [-110, 100] and [-10, 10].
std::vector<float> samples(std::int64_t n) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> out{0.0f,      -0.0f,     inf,        -inf,          std::nanf(""),  -std::nanf(""),
                         -104.0f,   -103.97f,  89.0f,      88.7228394f,   88.7228469f,    -87.3365479f,
                         -87.34f,   0.625f,    -0.625f,    0.62499994f,   9.01f,          -9.02f,
                         10.0f,     FLT_MAX,   -FLT_MAX,   FLT_MIN,       -FLT_MIN,       1e-45f,
                         -1e-45f,   1e-20f,    0.3465736f, -0.3465736f,   1.0f,           -1.0f};
  std::mt19937 rng(20);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_real_distribution<float> wide(-110.0f, 100.0f), narrow(-10.0f, 10.0f);
  while (static_cast<std::int64_t>(out.size()) < n) {
    const std::uint32_t b = bits(rng);
    float x;
    std::memcpy(&x, &b, sizeof x);
    out.push_back(x);
    out.push_back(wide(rng));
    out.push_back(narrow(rng));
  }
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// e[i] = exp(x[i]), t[i] = tanh(x[i]) over f32; params x, e, t.
backends::CompileRequest exp_tanh(std::int64_t n, AxisType axis) {
  auto x = make_node("x", DType::F32, {n});
  auto e = make_node("e", DType::F32, {n});
  auto t = make_node("t", DType::F32, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto body = for_loop(i, 0, n,
                       seq({set(e, at, apply(Op::Exp, DType::F32, {get(x, at)})),
                            set(t, at, apply(Op::Tanh, DType::F32, {get(x, at)}))}),
                       axis);
  return {LoweredRoutine{axis == AxisType::Vectorized ? "own_math_vector" : "own_math_scalar", body, {}}, {x, e, t}};
}

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The first sample where `got` and `want` differ in their bits, or -1.
std::int64_t first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  for (std::size_t k = 0; k < got.size(); ++k)
    if (bits_of(got[k]) != bits_of(want[k])) return static_cast<std::int64_t>(k);
  return -1;
}

// |got - exact| in units in the last place of the f32 nearest `exact` (subnormals: 2^-149).
double ulps(float got, double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : 1e9;
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : 1e9;
  int exponent = 0;
  std::frexp(rounded == 0 ? FLT_TRUE_MIN : rounded, &exponent);
  const double ulp = std::max(std::ldexp(1.0, exponent - 24), std::ldexp(1.0, -149));
  return std::abs(static_cast<double>(got) - exact) / ulp;
}

class OwnMath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xs_ = new std::vector<float>(samples(kSamples));
    exps_ = new std::vector<float>(xs_->size());
    tanhs_ = new std::vector<float>(xs_->size());
    for (std::size_t k = 0; k < xs_->size(); ++k) {
      (*exps_)[k] = own_expf((*xs_)[k]);
      (*tanhs_)[k] = own_tanhf((*xs_)[k]);
    }
  }
  static void TearDownTestSuite() {
    delete xs_;
    delete exps_;
    delete tanhs_;
  }
  // The C backend's results for the first `n` samples.
  static void run_c(std::int64_t n, AxisType axis, std::vector<float>& e, std::vector<float>& t) {
    const std::vector<float> x(xs_->begin(), xs_->begin() + n);
    const auto request = exp_tanh(n, axis);
    const auto out = test_util::run_on(*test_util::cc(), request, {bytes_of(x)});
    if (axis == AxisType::Vectorized) {
      EXPECT_NE(test_util::cc()->compile(request)->source().find("_tanh("), std::string::npos);
    }
    e = values_of<float>(out[1]);
    t = values_of<float>(out[2]);
  }
  static std::vector<float> head(const std::vector<float>* v, std::int64_t n) { return {v->begin(), v->begin() + n}; }

  static std::vector<float>* xs_;
  static std::vector<float>* exps_;
  static std::vector<float>* tanhs_;
};
std::vector<float>* OwnMath::xs_ = nullptr;
std::vector<float>* OwnMath::exps_ = nullptr;
std::vector<float>* OwnMath::tanhs_ = nullptr;

TEST_F(OwnMath, InterpreterComputesTheOwnFunctions) {
  constexpr std::int64_t n = 20'000;
  const std::vector<float> x = head(xs_, n);
  const auto out = test_util::run_on(*backends::make_interpreter_backend(), exp_tanh(n, AxisType::Serial), {bytes_of(x)});
  EXPECT_EQ(first_difference(values_of<float>(out[1]), head(exps_, n)), -1);
  EXPECT_EQ(first_difference(values_of<float>(out[2]), head(tanhs_, n)), -1);
}

TEST_F(OwnMath, ScalarCIsBitwiseTheInterpreter) {
  std::vector<float> e, t;
  run_c(kSamples, AxisType::Serial, e, t);
  EXPECT_EQ(first_difference(e, *exps_), -1);
  EXPECT_EQ(first_difference(t, *tanhs_), -1);
}

TEST_F(OwnMath, VectorCIsBitwiseTheInterpreterAtEveryWidth) {
  test_util::ConfigGuard guard;
  std::vector<float> e, t;
  run_c(kSamples, AxisType::Vectorized, e, t);  // the machine's width
  EXPECT_EQ(first_difference(e, *exps_), -1);
  EXPECT_EQ(first_difference(t, *tanhs_), -1);
  for (const char* bytes : {"16", "32", "64"}) {
    config::set_override("cc_vector_bytes", bytes);
    constexpr std::int64_t n = 300'007;  // a remainder for every width
    run_c(n, AxisType::Vectorized, e, t);
    EXPECT_EQ(first_difference(e, head(exps_, n)), -1) << bytes << "-byte vectors";
    EXPECT_EQ(first_difference(t, head(tanhs_, n)), -1) << bytes << "-byte vectors";
  }
}

// Over every f32 (measured once, exhaustively): exp 1.013 ulp (at 59.306038), tanh 1.330 ulp
// (at 0.62830955; glibc's tanhf: 2.19 ulp); the samples must stay within those.
TEST_F(OwnMath, ErrorAgainstTheExactResultIsBounded) {
  double worst_exp = 0, worst_tanh = 0;
  for (std::size_t k = 0; k < xs_->size(); ++k) {
    const double x = (*xs_)[k];
    worst_exp = std::max(worst_exp, ulps((*exps_)[k], std::exp(x)));
    worst_tanh = std::max(worst_tanh, ulps((*tanhs_)[k], std::tanh(x)));
  }
  EXPECT_LE(worst_exp, 1.014);  // the measured maxima, rounded up
  EXPECT_LE(worst_tanh, 1.331);
  EXPECT_GT(worst_exp, 0.5);  // not correctly rounded: the bound is what is tested
}

TEST_F(OwnMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(own_expf(0.0f), 1.0f);
  EXPECT_EQ(own_expf(-0.0f), 1.0f);
  EXPECT_EQ(own_expf(inf), inf);
  EXPECT_EQ(own_expf(-inf), 0.0f);
  EXPECT_EQ(own_expf(89.0f), inf);
  EXPECT_EQ(own_expf(-104.0f), 0.0f);
  EXPECT_GT(own_expf(-103.0f), 0.0f);  // subnormal, not flushed
  EXPECT_TRUE(std::isnan(own_expf(std::nanf(""))));
  EXPECT_EQ(bits_of(own_tanhf(-0.0f)), bits_of(-0.0f));
  EXPECT_EQ(own_tanhf(inf), 1.0f);
  EXPECT_EQ(own_tanhf(-inf), -1.0f);
  EXPECT_EQ(own_tanhf(9.5f), 1.0f);
  EXPECT_LT(own_tanhf(9.0f), 1.0f);
  EXPECT_EQ(own_tanhf(1e-30f), 1e-30f);
  EXPECT_TRUE(std::isnan(own_tanhf(std::nanf(""))));
}

}  // namespace
}  // namespace cannl
