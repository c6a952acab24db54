// Narrow float formats as bit patterns. Every narrowing goes through one routine that rounds the
// exact binary64 value once (round to nearest, ties to even): f32 -> f64 is exact, so narrowing a
// float through it rounds once too, and narrowing a double never rounds twice.
#include "cannl/support/float_codecs.h"

#include <bit>
#include <cmath>

namespace cannl {
namespace {

/// Layout of a narrow binary format: exponent and stored-mantissa widths, overflow behavior.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool saturate;  // finite overflow -> max finite (fp8 E5M2) instead of infinity
};

constexpr Format kF16{5, 10, false};
constexpr Format kBF16{8, 7, false};
constexpr Format kFP8{5, 2, true};
constexpr Format kTF32{8, 10, false};

/// `value >> shift`, rounded to nearest, ties to even. Requires 0 <= shift < 64.
std::uint64_t shift_right_round_even(std::uint64_t value, int shift) {
  if (shift == 0) return value;
  std::uint64_t quotient = value >> shift;
  std::uint64_t remainder = value & ((std::uint64_t{1} << shift) - 1);
  std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (quotient & 1) != 0)) ++quotient;
  return quotient;
}

/// Encodes a NaN or infinity of the binary64 pattern (exponent all ones). NaN payloads keep their
/// top bits; the quiet bit is set so a NaN never becomes an infinity or a signaling NaN.
std::uint32_t encode_special(std::uint64_t mantissa, std::uint32_t sign, const Format& f) {
  std::uint32_t infinity = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  if (mantissa == 0) return sign | infinity;
  auto payload = static_cast<std::uint32_t>(mantissa >> (52 - f.mantissa_bits));
  return sign | infinity | payload | (1u << (f.mantissa_bits - 1));
}

/// Encodes the finite, nonzero binary64 `x` (as bits, sign removed) in format `f`.
std::uint32_t encode_magnitude(int biased_exponent, std::uint64_t mantissa, const Format& f) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int min_normal_exponent = 1 - bias;
  const std::uint32_t infinity = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  // binary64 subnormals are below 2^-1022, far under half the smallest subnormal of any target.
  if (biased_exponent == 0) return 0;
  int exponent = biased_exponent - 1023;
  std::uint64_t significand = mantissa | (std::uint64_t{1} << 52);
  int shift = 52 - f.mantissa_bits;
  if (exponent < min_normal_exponent) shift += min_normal_exponent - exponent;
  if (shift >= 64) return 0;  // far below half the smallest subnormal
  std::uint64_t rounded = shift_right_round_even(significand, shift);
  // Normal numbers: the implicit bit in `rounded` adds 1 to (exponent field - 1), and a rounding
  // carry out of the mantissa bumps the exponent for free. Subnormals have exponent field 0, and
  // rounding up to 1 << mantissa_bits is exactly the smallest normal's pattern.
  std::uint64_t bits = rounded;
  if (exponent >= min_normal_exponent) {
    bits += static_cast<std::uint64_t>(exponent + bias - 1) << f.mantissa_bits;
  }
  if (bits >= infinity) return f.saturate ? infinity - 1 : infinity;
  return static_cast<std::uint32_t>(bits);
}

std::uint32_t narrow(double x, const Format& f) {
  auto bits = std::bit_cast<std::uint64_t>(x);
  auto sign = static_cast<std::uint32_t>(bits >> 63) << (f.exponent_bits + f.mantissa_bits);
  auto biased_exponent = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased_exponent == 0x7ff) return encode_special(mantissa, sign, f);
  return sign | encode_magnitude(biased_exponent, mantissa, f);
}

/// Decodes a pattern of a format with exponent_bits <= 8 into the float of the same value
/// (exact: every such value is a float). NaNs come back quiet.
float widen(std::uint32_t bits, const Format& f) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const std::uint32_t max_exponent = (1u << f.exponent_bits) - 1;
  const std::uint32_t width = static_cast<std::uint32_t>(f.exponent_bits + f.mantissa_bits);
  std::uint32_t sign = (bits >> width) & 1;
  std::uint32_t exponent = (bits >> f.mantissa_bits) & max_exponent;
  std::uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1);
  std::uint32_t out_sign = sign << 31;
  if (exponent == max_exponent) {
    std::uint32_t quiet = mantissa != 0 ? 0x400000u : 0;
    return std::bit_cast<float>(out_sign | 0x7f800000u | quiet |
                                (mantissa << (23 - f.mantissa_bits)));
  }
  if (exponent == 0) {
    // Subnormal (or zero): mantissa * 2^(1 - bias - mantissa_bits), exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), 1 - bias - f.mantissa_bits);
    return sign != 0 ? -magnitude : magnitude;
  }
  std::uint32_t float_exponent = exponent - static_cast<std::uint32_t>(bias) + 127;
  return std::bit_cast<float>(out_sign | (float_exponent << 23) |
                              (mantissa << (23 - f.mantissa_bits)));
}

}  // namespace

std::uint16_t f32_to_f16(float x) { return static_cast<std::uint16_t>(narrow(x, kF16)); }
std::uint16_t f64_to_f16(double x) { return static_cast<std::uint16_t>(narrow(x, kF16)); }
float f16_to_f32(std::uint16_t bits) { return widen(bits, kF16); }

std::uint16_t f32_to_bf16(float x) { return static_cast<std::uint16_t>(narrow(x, kBF16)); }
std::uint16_t f64_to_bf16(double x) { return static_cast<std::uint16_t>(narrow(x, kBF16)); }
float bf16_to_f32(std::uint16_t bits) { return widen(bits, kBF16); }

std::uint8_t f32_to_fp8(float x) { return static_cast<std::uint8_t>(narrow(x, kFP8)); }
std::uint8_t f64_to_fp8(double x) { return static_cast<std::uint8_t>(narrow(x, kFP8)); }
float fp8_to_f32(std::uint8_t bits) { return widen(bits, kFP8); }

float round_to_bf16(float x) { return widen(narrow(x, kBF16), kBF16); }
double round_to_bf16(double x) { return widen(narrow(x, kBF16), kBF16); }
float round_to_f16(float x) { return widen(narrow(x, kF16), kF16); }
double round_to_f16(double x) { return widen(narrow(x, kF16), kF16); }
float round_to_tf32(float x) { return widen(narrow(x, kTF32), kTF32); }
double round_to_tf32(double x) { return widen(narrow(x, kTF32), kTF32); }
float round_to_fp8(float x) { return widen(narrow(x, kFP8), kFP8); }
double round_to_fp8(double x) { return widen(narrow(x, kFP8), kFP8); }

}  // namespace cannl
