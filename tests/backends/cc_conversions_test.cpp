// Conversions of the generated C: every dtype pair against the interpreter, hand-checked values,
// and the C prelude's narrow-float codecs against the C++ codecs of src/support.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/support/float_codecs.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::Bytes;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

using test_util::cc;

// Interesting values: signs, zeros, rounding ties, range edges, overflow, NaN and infinities.
const std::vector<double> kValues{0.0, -0.0, 1.0, -1.5, 2.5, 3.7, -3.7, 0.1, 255.0, 256.0, 300.0,
                                  65504.0, 65519.0, 65520.0, 57344.0, 61440.0, 1e9, -3e9,
                                  4294967295.0, 4294967296.0, 9.3e18, 1.9e19, -1e300, 1e-8,
                                  5.96e-8, 2.98e-8, 1e-40,
                                  std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity()};

TEST(CcConversions, EveryDtypePairAgreesWithInterpreter) {
  auto interp = backends::make_interpreter_backend();
  const auto n = static_cast<std::int64_t>(kValues.size());
  for (DType from : kAllDTypes) {
    // The source values in `from`'s storage, converted by the interpreter from f64.
    const Bytes src = run_on(*interp, test_routines::convert_copy(DType::F64, from, n), {bytes_of(kValues)})[1];
    auto r = test_routines::convert_to_all(from, n);
    const auto mine = run_on(*cc(), r, {src});
    const auto reference = run_on(*interp, r, {src});
    for (std::size_t k = 1; k < r.params.size(); ++k) {
      EXPECT_EQ(mine[k], reference[k]) << dtype_name(from) << " -> " << dtype_name(r.params[k]->dtype);
    }
  }
}

TEST(CcConversions, HandCheckedValues) {
  const std::vector<double> v{1e9, std::nan(""), -3.7, 65520.0, -1e9, 3e9};
  auto out = run_on(*cc(), test_routines::convert_to_all(DType::F64, 6), {bytes_of(v)});
  auto index = [](DType t) {
    for (std::size_t k = 0; k < std::size(kAllDTypes); ++k) {
      if (kAllDTypes[k] == t) return k + 1;
    }
    return std::size_t{0};
  };
  const auto i32 = values_of<std::int32_t>(out[index(DType::I32)]);
  EXPECT_EQ(i32, (std::vector<std::int32_t>{1000000000, 0, -3, 65520, -1000000000, 2147483647}));
  const auto u8 = values_of<std::uint8_t>(out[index(DType::U8)]);
  EXPECT_EQ(u8, (std::vector<std::uint8_t>{255, 0, 0, 255, 0, 255}));
  const auto fp8 = values_of<std::uint8_t>(out[index(DType::FP8)]);
  EXPECT_EQ(fp8[0], 0x7B);  // finite overflow saturates to 57344
  EXPECT_EQ(fp8[4], 0xFB);  // -57344
  const auto f16 = values_of<std::uint16_t>(out[index(DType::F16)]);
  EXPECT_EQ(f16[3], 0x7C00);  // 65520 rounds (tie to even) to +inf
  EXPECT_EQ(f16[0], 0x7C00);
  EXPECT_EQ(f16[1] & 0x7C00, 0x7C00);
  EXPECT_NE(f16[1] & 0x03FF, 0);  // NaN stays NaN
  const auto u4 = values_of<std::uint32_t>(out[index(DType::U4x32)]);
  EXPECT_EQ(u4[4 * 2], static_cast<std::uint32_t>(-3));  // -3 as int64: low word
  EXPECT_EQ(u4[4 * 2 + 1], 0xFFFFFFFFu);               // high word
  EXPECT_EQ(u4[4 * 2 + 2], 0u);
}

// The prelude codecs (C) and src/support codecs (C++) are independent implementations.
TEST(CcConversions, PreludeCodecsMatchSupportCodecs) {
  std::mt19937 rng(42);
  constexpr int kRandom = 1 << 16;
  std::vector<std::uint32_t> f32_bits(kRandom);
  for (auto& b : f32_bits) b = static_cast<std::uint32_t>(rng());
  for (std::uint32_t k = 0; k < 4096; ++k) f32_bits[k] = 0x33000000u + k * 0x00100000u;  // edges
  std::vector<float> f32(kRandom);
  std::memcpy(f32.data(), f32_bits.data(), f32_bits.size() * 4);
  const auto n = static_cast<std::int64_t>(kRandom);
  auto out32 = run_on(*cc(), test_routines::convert_to_all(DType::F32, n), {bytes_of(f32)});
  std::vector<double> f64(kRandom);
  for (std::size_t k = 0; k < f64.size(); ++k) f64[k] = static_cast<double>(f32[k]) * (1.0 + 1e-12);
  auto out64 = run_on(*cc(), test_routines::convert_to_all(DType::F64, n), {bytes_of(f64)});
  const auto h32 = values_of<std::uint16_t>(out32[3]), b32 = values_of<std::uint16_t>(out32[4]);
  const auto e32 = values_of<std::uint8_t>(out32[5]);
  const auto h64 = values_of<std::uint16_t>(out64[3]), b64 = values_of<std::uint16_t>(out64[4]);
  const auto e64 = values_of<std::uint8_t>(out64[5]);
  int mismatches = 0;
  for (std::size_t k = 0; k < f32.size() && mismatches < 10; ++k) {
    if (std::isnan(f32[k])) continue;  // NaN payload conventions may differ; NaN-ness is checked above
    const bool ok = h32[k] == f32_to_f16(f32[k]) && b32[k] == f32_to_bf16(f32[k]) &&
                    e32[k] == f32_to_fp8(f32[k]) && h64[k] == f64_to_f16(f64[k]) &&
                    b64[k] == f64_to_bf16(f64[k]) && e64[k] == f64_to_fp8(f64[k]);
    if (!ok) ++mismatches;
    EXPECT_TRUE(ok) << "value " << f32[k] << " (bits 0x" << std::hex << f32_bits[k] << ")";
  }
}

// Bit for bit, NaNs included: a signaling NaN pattern (f16 0x7c01) widens to a quiet NaN with
// its payload, as the interpreter's codec (and x86 F16C) widens it; a copy of narrow data into
// an f32 node must store the interpreter's bits.
TEST(CcConversions, EveryNarrowPatternDecodesLikeSupportCodecs) {
  std::vector<std::uint16_t> all(65536);
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<std::uint16_t>(k);
  for (DType t : {DType::F16, DType::BF16}) {
    auto out = run_on(*cc(), test_routines::convert_copy(t, DType::F32, 65536), {bytes_of(all)});
    const auto got = values_of<std::uint32_t>(out[1]);
    for (std::size_t k = 0; k < all.size(); ++k) {
      const float want = t == DType::F16 ? f16_to_f32(all[k]) : bf16_to_f32(all[k]);
      ASSERT_EQ(got[k], std::bit_cast<std::uint32_t>(want)) << dtype_name(t) << " pattern 0x" << std::hex << k;
    }
  }
  std::vector<std::uint8_t> bytes(256);
  for (std::size_t k = 0; k < 256; ++k) bytes[k] = static_cast<std::uint8_t>(k);
  auto out = run_on(*cc(), test_routines::convert_copy(DType::FP8, DType::F32, 256), {bytes_of(bytes)});
  const auto got = values_of<std::uint32_t>(out[1]);
  for (std::size_t k = 0; k < 256; ++k) {
    const float want = fp8_to_f32(static_cast<std::uint8_t>(k));
    ASSERT_EQ(got[k], std::bit_cast<std::uint32_t>(want)) << "fp8 pattern 0x" << std::hex << k;
  }
}

}  // namespace
}  // namespace cannl
