// Dtype conversions of interpreter values (the rules of loop_ir.h; the C backend's conversion
// helpers implement the same ones, so both must change together).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"
#include "cannl/support/saturate.h"

namespace cannl::interp {

using ir::DType;

namespace {

bool is_narrow(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::FP8; }

// The value a narrow cell holds after storing `x`: rounded by the f32 codec (one rounding).
float round_to_narrow(float x, DType t) {
  switch (t) {
    case DType::F16: return f16_to_f32(f32_to_f16(x));
    case DType::BF16: return bf16_to_f32(f32_to_bf16(x));
    case DType::FP8: return fp8_to_f32(f32_to_fp8(x));
    default: throw InternalError("round_to_narrow: not a narrow float");
  }
}

// As above from f64, rounding once with the f64 codec (never through f32: double rounding).
float round_to_narrow(double x, DType t) {
  switch (t) {
    case DType::F16: return f16_to_f32(f64_to_f16(x));
    case DType::BF16: return bf16_to_f32(f64_to_bf16(x));
    case DType::FP8: return fp8_to_f32(f64_to_fp8(x));
    default: throw InternalError("round_to_narrow: not a narrow float");
  }
}

Value saturate_to_int(double x, DType to) {
  switch (to) {
    case DType::I32: return Value::of(saturating_trunc<std::int32_t>(x));
    case DType::I64: return Value::of(saturating_trunc<std::int64_t>(x));
    case DType::U32: return Value::of(saturating_trunc<std::uint32_t>(x));
    case DType::U64: return Value::of(saturating_trunc<std::uint64_t>(x));
    case DType::U8: return Value::of(saturating_trunc<std::uint8_t>(x));
    default: throw InternalError("saturate_to_int: not an integer dtype");
  }
}

// An f64 source: one rounding to every float target.
Value from_f64(double x, DType to) {
  if (to == DType::F64) return Value::of(x);
  if (to == DType::F32) return Value::of(static_cast<float>(x));
  if (is_narrow(to)) return Value::narrow(to, round_to_narrow(x, to));
  return saturate_to_int(x, to);
}

// An f32 (or decoded narrow) source.
Value from_f32(float x, DType to) {
  if (to == DType::F64) return Value::of(static_cast<double>(x));
  if (to == DType::F32) return Value::of(x);
  if (is_narrow(to)) return Value::narrow(to, round_to_narrow(x, to));
  return saturate_to_int(static_cast<double>(x), to);
}

// An integer source: C casts, except narrow floats which go through f64.
template <class Int>
Value from_int(Int x, DType to) {
  switch (to) {
    case DType::F64: return Value::of(static_cast<double>(x));
    case DType::F32: return Value::of(static_cast<float>(x));
    case DType::F16:
    case DType::BF16:
    case DType::FP8: return Value::narrow(to, round_to_narrow(static_cast<double>(x), to));
    case DType::I32: return Value::of(static_cast<std::int32_t>(x));
    case DType::I64: return Value::of(static_cast<std::int64_t>(x));
    case DType::U32: return Value::of(static_cast<std::uint32_t>(x));
    case DType::U64: return Value::of(static_cast<std::uint64_t>(x));
    case DType::U8: return Value::of(static_cast<std::uint8_t>(x));
    case DType::U4x32: break;
  }
  throw InternalError("from_int: unexpected target dtype");
}

Value to_u4x32(const Value& v) {
  const std::uint64_t bits =
      v.dtype == DType::U64
          ? v.get<std::uint64_t>()
          : static_cast<std::uint64_t>(convert(v, DType::I64).get<std::int64_t>());
  return Value::of(ir::Uint4x32{
      {static_cast<std::uint32_t>(bits), static_cast<std::uint32_t>(bits >> 32), 0, 0}});
}

std::uint64_t low_64_bits(const ir::Uint4x32& x) {
  return (static_cast<std::uint64_t>(x.v[1]) << 32) | x.v[0];
}

}  // namespace

Value convert(const Value& v, DType to) {
  if (v.dtype == to) return v;
  if (to == DType::U4x32) return to_u4x32(v);
  return std::visit(
      [to](const auto& x) -> Value {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::Uint4x32>)
          return from_int(low_64_bits(x), to);
        else if constexpr (std::is_same_v<T, double>)
          return from_f64(x, to);
        else if constexpr (std::is_same_v<T, float>)
          return from_f32(x, to);
        else
          return from_int(x, to);
      },
      v.data);
}

Value constant_value(double value, DType dtype) { return convert(Value::of(value), dtype); }

Value constant_bits_value(std::int64_t bits, DType dtype) {
  return convert(Value::of(bits), dtype);
}

}  // namespace cannl::interp
