#pragma once
// The scalar values the interpreter computes with: one tagged value per dtype.
//
// Narrow floats (f16, bf16, fp8) carry their decoded value as a float, which they represent
// exactly; their storage format (bit patterns) only appears in buffers (see storage.h).
//
//   Value v = Value::of(1.5f);       v.dtype == DType::F32, v.get<float>() == 1.5f
//   Value h = Value::narrow(DType::BF16, 1.0f);   h.get<float>() == 1.0f

#include <cstdint>
#include <string>
#include <variant>

#include "cannl/ir/dtype.h"

namespace cannl::interp {

/// A scalar value tagged with its dtype. The variant alternative follows the dtype: double for
/// f64; float for f32, f16, bf16 and fp8; the matching integer type; Uint4x32 for u4x32.
struct Value {
  ir::DType dtype = ir::DType::F32;
  std::variant<double, float, std::int32_t, std::int64_t, std::uint32_t, std::uint64_t,
               std::uint8_t, ir::Uint4x32>
      data = 0.0f;

  /// Value::of(2.0) is an f64, Value::of(std::uint8_t{7}) a u8.
  static Value of(double x) { return {ir::DType::F64, x}; }
  static Value of(float x) { return {ir::DType::F32, x}; }
  static Value of(std::int32_t x) { return {ir::DType::I32, x}; }
  static Value of(std::int64_t x) { return {ir::DType::I64, x}; }
  static Value of(std::uint32_t x) { return {ir::DType::U32, x}; }
  static Value of(std::uint64_t x) { return {ir::DType::U64, x}; }
  static Value of(std::uint8_t x) { return {ir::DType::U8, x}; }
  static Value of(ir::Uint4x32 x) { return {ir::DType::U4x32, x}; }
  /// A narrow-float value; `decoded` must be representable in `dtype` (callers round first).
  /// Value::narrow(DType::F16, 0.5f)
  static Value narrow(ir::DType dtype, float decoded) { return {dtype, decoded}; }

  /// The payload as T; throws std::bad_variant_access when T does not match.
  /// Value::of(3).get<std::int32_t>() == 3
  template <class T>
  T get() const {
    return std::get<T>(data);
  }
};

/// The all-zero value of `dtype`: zero_value(DType::U4x32) has four zero words.
Value zero_value(ir::DType dtype);

/// True when the value differs from zero (as C's `x != 0`; NaN counts as nonzero). For u4x32,
/// true when any word is nonzero. is_nonzero(Value::of(-0.0)) == false
bool is_nonzero(const Value& v);

/// Readable text for messages and test failures: "f32 1.5", "u4x32 {1, 0, 0, 0}".
std::string to_string(const Value& v);

/// True when both values have the same dtype and the same bits (NaN equals an identical NaN;
/// -0.0 differs from 0.0). bit_equal(Value::of(0.0f), Value::of(-0.0f)) == false
bool bit_equal(const Value& a, const Value& b);

}  // namespace cannl::interp
