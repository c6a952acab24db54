// Narrow float codecs checked exhaustively against independent references: every bit pattern
// decodes to the value its fields define and re-encodes to itself; narrowing agrees with a
// brute-force nearest-value search (and with the compiler's _Float16 where available) on every
// midpoint, its float/double neighbours, and a few million random inputs.
#include "cannl/support/float_codecs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace cannl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A codec under test and its layout (for the independent reference).
struct Codec {
  std::string name;
  int exponent_bits;
  int mantissa_bits;
  bool saturate;
  std::uint32_t (*from_f32)(float);
  std::uint32_t (*from_f64)(double);
  float (*to_f32)(std::uint32_t);

  int width() const { return 1 + exponent_bits + mantissa_bits; }
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  std::uint32_t infinity() const { return ((1u << exponent_bits) - 1) << mantissa_bits; }
  std::uint32_t sign_bit() const { return 1u << (width() - 1); }
};

const Codec kF16{"f16", 5, 10, false, [](float x) -> std::uint32_t { return f32_to_f16(x); },
                 [](double x) -> std::uint32_t { return f64_to_f16(x); },
                 [](std::uint32_t b) { return f16_to_f32(static_cast<std::uint16_t>(b)); }};
const Codec kBF16{"bf16", 8, 7, false, [](float x) -> std::uint32_t { return f32_to_bf16(x); },
                  [](double x) -> std::uint32_t { return f64_to_bf16(x); },
                  [](std::uint32_t b) { return bf16_to_f32(static_cast<std::uint16_t>(b)); }};
const Codec kFP8{"fp8", 5, 2, true, [](float x) -> std::uint32_t { return f32_to_fp8(x); },
                 [](double x) -> std::uint32_t { return f64_to_fp8(x); },
                 [](std::uint32_t b) { return fp8_to_f32(static_cast<std::uint8_t>(b)); }};

/// The value a pattern's fields define, computed from the textbook formula (not the codec).
double field_value(const Codec& c, std::uint32_t bits) {
  std::uint32_t exponent = (bits >> c.mantissa_bits) & ((1u << c.exponent_bits) - 1);
  std::uint32_t mantissa = bits & ((1u << c.mantissa_bits) - 1);
  double sign = (bits & c.sign_bit()) != 0 ? -1.0 : 1.0;
  if (exponent == (1u << c.exponent_bits) - 1) {
    return mantissa == 0 ? sign * INFINITY : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - c.bias() - c.mantissa_bits);
  return sign * std::ldexp(1.0 + std::ldexp(mantissa, -c.mantissa_bits),
                           static_cast<int>(exponent) - c.bias());
}

bool is_nan_pattern(const Codec& c, std::uint32_t bits) {
  return (bits & c.infinity()) == c.infinity() && (bits & ((1u << c.mantissa_bits) - 1)) != 0;
}

/// Brute-force narrowing: the nearest entry of the sorted table of all non-negative finite
/// values, ties to the even pattern. table[i] is the value of pattern i; the extra last entry is
/// 2^(emax+1), the value "infinity" rounds like under IEEE overflow rules.
class Reference {
 public:
  explicit Reference(const Codec& codec) : c_(codec) {
    for (std::uint32_t bits = 0; bits < c_.infinity(); ++bits) table_.push_back(field_value(c_, bits));
    table_.push_back(std::ldexp(1.0, c_.bias() + 1));
  }

  const std::vector<double>& table() const { return table_; }

  /// Expected pattern for a non-NaN x.
  std::uint32_t narrow(double x) const {
    std::uint32_t sign = std::signbit(x) ? c_.sign_bit() : 0;
    double magnitude = std::fabs(x);
    auto n = static_cast<std::uint32_t>(table_.size() - 1);  // the infinity pattern
    std::uint32_t index = n;
    if (magnitude < table_[n]) {
      auto above = std::upper_bound(table_.begin(), table_.end(), magnitude);
      auto low = static_cast<std::uint32_t>(above - table_.begin() - 1);
      double midpoint = (table_[low] + table_[low + 1]) / 2;  // exact: few significant bits
      if (magnitude < midpoint) index = low;
      else if (magnitude > midpoint) index = low + 1;
      else index = (low % 2 == 0) ? low : low + 1;
    }
    if (index == n && c_.saturate && !std::isinf(x)) index = n - 1;
    return sign | index;
  }

 private:
  const Codec& c_;
  std::vector<double> table_;
};

/// Compares both narrowing entry points with the reference on one input; counts failures so a
/// broken codec reports a few examples rather than millions of lines.
class NarrowingChecker {
 public:
  explicit NarrowingChecker(const Codec& codec) : c_(codec), reference_(codec) {}

  void check_f32(float x) {
    expect(static_cast<double>(x), c_.from_f32(x), "f32");
  }
  void check_f64(double x) { expect(x, c_.from_f64(x), "f64"); }

  const Reference& reference() const { return reference_; }
  long long checked() const { return checked_; }

 private:
  void expect(double x, std::uint32_t got, const char* from) {
    ++checked_;
    bool ok = std::isnan(x) ? is_nan_pattern(c_, got) &&
                                  (got & (1u << (c_.mantissa_bits - 1))) != 0  // quiet
                            : got == reference_.narrow(x);
    if (ok || ++failures_ > 10) return;
    ADD_FAILURE() << c_.name << " from " << from << ": x=" << std::hexfloat << x << " got 0x"
                  << std::hex << got << " expected 0x" << reference_.narrow(x);
  }

  const Codec& c_;
  Reference reference_;
  long long checked_ = 0;
  int failures_ = 0;
};

class FloatCodecTest : public ::testing::TestWithParam<const Codec*> {};

TEST_P(FloatCodecTest, EveryPatternDecodesToItsFieldValueAndRoundTrips) {
  const Codec& c = *GetParam();
  for (std::uint32_t bits = 0; bits < (1u << c.width()); ++bits) {
    float value = c.to_f32(bits);
    double expected = field_value(c, bits);
    bool negative = (bits & c.sign_bit()) != 0;
    ASSERT_EQ(std::signbit(value), negative) << c.name << " 0x" << std::hex << bits;
    if (is_nan_pattern(c, bits)) {
      ASSERT_TRUE(std::isnan(value)) << c.name << " 0x" << std::hex << bits;
      std::uint32_t again = c.from_f32(value);
      ASSERT_TRUE(is_nan_pattern(c, again)) << c.name << " 0x" << std::hex << bits;
      ASSERT_EQ(again & c.sign_bit(), bits & c.sign_bit());
      continue;
    }
    ASSERT_EQ(static_cast<double>(value), expected) << c.name << " 0x" << std::hex << bits;
    ASSERT_EQ(c.from_f32(value), bits) << c.name << " 0x" << std::hex << bits;
    ASSERT_EQ(c.from_f64(static_cast<double>(value)), bits) << c.name << " 0x" << std::hex << bits;
  }
}

TEST_P(FloatCodecTest, MidpointsAndTheirNeighboursRoundCorrectly) {
  const Codec& c = *GetParam();
  NarrowingChecker checker(c);
  const auto& table = checker.reference().table();
  std::vector<double> anchors;
  for (std::size_t i = 0; i + 1 < table.size(); ++i) {
    anchors.push_back(table[i]);
    anchors.push_back((table[i] + table[i + 1]) / 2);  // includes the overflow threshold
  }
  anchors.push_back(table.back());
  for (double anchor : anchors) {
    for (double sign : {1.0, -1.0}) {
      double x = sign * anchor;
      // Exact: every anchor has at most 12 significant bits. Only 2^128 (bf16's virtual
      // "next after max") is outside the float range; its float neighbourhood is covered by max.
      auto xf = static_cast<float>(x);
      if (std::isfinite(xf)) {
        ASSERT_EQ(static_cast<double>(xf), x);
        for (float f : {xf, std::nextafter(xf, -INFINITY), std::nextafter(xf, INFINITY)}) {
          checker.check_f32(f);
        }
      }
      for (double d : {x, std::nextafter(x, -INFINITY), std::nextafter(x, INFINITY)}) {
        checker.check_f64(d);
      }
    }
  }
  EXPECT_GT(checker.checked(), 6 * static_cast<long long>(table.size()));
}

TEST_P(FloatCodecTest, SpecialValues) {
  const Codec& c = *GetParam();
  NarrowingChecker checker(c);
  for (double x : {0.0, -0.0, kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                   -std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::signaling_NaN(),
                   std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::max(), 1e300, -1e-300,
                   static_cast<double>(std::numeric_limits<float>::denorm_min()),
                   static_cast<double>(std::numeric_limits<float>::max())}) {
    checker.check_f64(x);
    checker.check_f32(static_cast<float>(x));
  }
  EXPECT_EQ(c.from_f32(-0.0f), c.sign_bit()) << "signed zero is kept";
  EXPECT_EQ(c.from_f64(-INFINITY), c.sign_bit() | c.infinity());
  EXPECT_EQ(c.from_f64(-std::numeric_limits<double>::quiet_NaN()) & c.sign_bit(), c.sign_bit());
}

TEST_P(FloatCodecTest, RandomInputsFromAFixedSeed) {
  const Codec& c = *GetParam();
  NarrowingChecker checker(c);
  std::mt19937_64 random(20240611);
  // Exponents from well below the smallest subnormal to above the overflow threshold.
  std::uniform_int_distribution<int> exponent(-c.bias() - c.mantissa_bits - 4, c.bias() + 3);
  for (int i = 0; i < 400000; ++i) {
    std::uint64_t bits = random();
    double x = std::ldexp(1.0 + static_cast<double>(bits >> 12) * 0x1p-52, exponent(random));
    if ((bits & 1) != 0) x = -x;
    checker.check_f64(x);
    checker.check_f32(static_cast<float>(x));
    checker.check_f32(std::bit_cast<float>(static_cast<std::uint32_t>(bits >> 32)));  // any float
    checker.check_f64(std::bit_cast<double>(bits));  // any double
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, FloatCodecTest, ::testing::Values(&kF16, &kBF16, &kFP8),
                         [](const auto& info) { return info.param->name; });

#ifdef __FLT16_MAX__  // g++ >= 12 on x86-64: the compiler's own correctly rounded conversions
TEST(F16AgainstCompiler, DecodeMatchesFloat16Casts) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    float ours = f16_to_f32(static_cast<std::uint16_t>(bits));
    auto theirs = static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(bits)));
    if (std::isnan(theirs)) {
      ASSERT_TRUE(std::isnan(ours)) << std::hex << bits;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(ours), std::bit_cast<std::uint32_t>(theirs))
          << std::hex << bits;
    }
  }
}

TEST(F16AgainstCompiler, NarrowingMatchesFloat16Casts) {
  Reference reference(kF16);
  std::vector<double> inputs;
  const auto& table = reference.table();
  for (std::size_t i = 0; i + 1 < table.size(); ++i) {
    double midpoint = (table[i] + table[i + 1]) / 2;
    for (double x : {table[i], midpoint, std::nextafter(midpoint, 0.0),
                     std::nextafter(midpoint, INFINITY)}) {
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  }
  std::mt19937_64 random(7);
  for (int i = 0; i < 400000; ++i) inputs.push_back(std::ldexp(
      static_cast<double>(random() >> 11) * 0x1p-53, static_cast<int>(random() % 48) - 30));
  int failures = 0;
  for (double x : inputs) {
    auto f = static_cast<float>(x);
    std::uint16_t expected64 = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    std::uint16_t expected32 = std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
    if (f64_to_f16(x) == expected64 && f32_to_f16(f) == expected32) continue;
    ADD_FAILURE() << std::hexfloat << x << " f64 -> 0x" << std::hex << f64_to_f16(x) << " vs 0x"
                  << expected64 << ", f32 -> 0x" << f32_to_f16(f) << " vs 0x" << expected32;
    if (++failures > 10) break;
  }
}
#endif

TEST(FloatCodecs, DocumentedExamples) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp8_to_f32(f32_to_fp8(1e9f)), 57344.0f);
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);     // largest finite half
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);     // halfway to 2^16 ties to even: infinity
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);     // smallest subnormal half
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);     // half of it ties to even zero
  EXPECT_EQ(f32_to_fp8(61440.0f), 0x7B);       // would round to infinity; saturates instead
  EXPECT_EQ(f32_to_fp8(-INFINITY), 0xFC);      // infinities stay infinite
  EXPECT_EQ(f32_to_bf16(3.0e38f * 10.0f), 0x7F80);
}

TEST(FloatCodecs, NarrowingFromDoubleRoundsOnce) {
  // 1 + 2^-11 + 2^-40: via float it becomes the tie 1 + 2^-11 and rounds to even (1.0); one
  // correct rounding sees it is above the tie and rounds up.
  double x = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(f64_to_f16(x), 0x3C01);
  EXPECT_EQ(f32_to_f16(static_cast<float>(x)), 0x3C00);
  double y = 1.0 + 0x1p-8 + 0x1p-40;  // the same trap one bf16 ulp lower
  EXPECT_EQ(f64_to_bf16(y), 0x3F81);
  EXPECT_EQ(f32_to_bf16(static_cast<float>(y)), 0x3F80);
  double z = 1.0 + 0x1p-3 + 0x1p-40;  // and for fp8
  EXPECT_EQ(f64_to_fp8(z), 0x3D);
  EXPECT_EQ(f32_to_fp8(static_cast<float>(z)), 0x3C);
}

}  // namespace
}  // namespace cannl
