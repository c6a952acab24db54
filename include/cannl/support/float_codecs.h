#pragma once
// Bit-exact conversions to and from the narrow float formats. Narrowing rounds to nearest, ties
// to even; subnormals and signed zeros are kept; NaN stays NaN. f16 (IEEE binary16) and bf16
// overflow to infinity; fp8 is E5M2 and *saturates* finite overflow to +-57344 (infinities stay
// infinite). Narrowing from f64 is one step (never through f32, which would round twice).
//
//   f32_to_bf16(1.0f) == 0x3F80;  fp8_to_f32(f32_to_fp8(1e9f)) == 57344.0f

#include <cstdint>

namespace cannl {

/// IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits); overflow rounds to infinity.
///   f32_to_f16(1.0f) == 0x3C00;  f16_to_f32(0x7BFF) == 65504.0f
std::uint16_t f32_to_f16(float x);
std::uint16_t f64_to_f16(double x);
float f16_to_f32(std::uint16_t bits);  // exact; NaNs come back quiet

/// bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a float, correctly rounded).
///   f32_to_bf16(1.0f) == 0x3F80;  bf16_to_f32(0x4049) == 3.140625f
std::uint16_t f32_to_bf16(float x);
std::uint16_t f64_to_bf16(double x);
float bf16_to_f32(std::uint16_t bits);  // exact; NaNs come back quiet

/// fp8 E5M2 (1 sign, 5 exponent, 2 mantissa bits); finite overflow saturates to +-57344.
///   f32_to_fp8(1.0f) == 0x3C;  f32_to_fp8(1e9f) == 0x7B;  f32_to_fp8(INFINITY) == 0x7C
std::uint8_t f32_to_fp8(float x);
std::uint8_t f64_to_fp8(double x);
float fp8_to_f32(std::uint8_t bits);  // exact; NaNs come back quiet

/// The value rounded to the nearest value of a narrower format (as the codecs above round) and
/// widened back, exactly: the operand rounding of a mixed-precision multiply. tf32 is f32's
/// exponent with 10 mantissa bits (NVIDIA's TensorFloat-32); f16 and bf16 overflow to infinity.
///   round_to_bf16(1.0f + 0x1p-9f) == 1.0f;  round_to_f16(65520.0f) == INFINITY;
///   round_to_tf32(1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f
float round_to_bf16(float x);
double round_to_bf16(double x);
float round_to_f16(float x);
double round_to_f16(double x);
float round_to_tf32(float x);
double round_to_tf32(double x);
/// fp8 E5M2 as a store saturates: finite values beyond 57344 round to +-57344.
float round_to_fp8(float x);
double round_to_fp8(double x);

}  // namespace cannl
