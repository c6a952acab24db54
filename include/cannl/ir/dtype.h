#pragma once
// Element precisions of tensor nodes and scalar expressions.
//
//   DType::F32: dtype_bytes == 4, dtype_name == "f32", is_float == true
//   compute_dtype(DType::BF16) == DType::F32   (narrow floats compute in f32, narrow once per store)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cannl::ir {

enum class DType : unsigned char { F64, F32, F16, BF16, FP8, I32, I64, U32, U64, U8, U4x32 };

inline constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16,
                                       DType::FP8, DType::I32, DType::I64, DType::U32,
                                       DType::U64, DType::U8,  DType::U4x32};

/// Storage size of one element in bytes (U4x32: 16).
std::size_t dtype_bytes(DType t);
/// Short name: f64 f32 f16 bf16 fp8 i32 i64 u32 u64 u8 u4x32.
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);
bool is_signed_int(DType t);
bool is_unsigned_int(DType t);
/// The type arithmetic happens in: F16/BF16/FP8 widen to F32 (the narrow_compute_f32 policy);
/// every other type computes in itself.
DType compute_dtype(DType t);
/// Promotion when two operands meet: U4x32 > F64 > F32 > BF16 > F16 > FP8 > U64 > I64 > U32 > I32 > U8.
DType promote(DType a, DType b);

/// A 128-bit value: PRNG key, counter and state. Words are little-endian order (v[0] lowest).
struct Uint4x32 {
  std::uint32_t v[4];
  friend bool operator==(const Uint4x32&, const Uint4x32&) = default;
};

}  // namespace cannl::ir
