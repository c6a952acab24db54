#pragma once
// The element types of the safetensors format and their conversions to cannl's dtypes and to
// host numbers. Payloads are little-endian and row-major; every conversion here is exact except
// where a doc comment says it rounds.
//
//   safetensors_dtype_from_name("BF16") == SafetensorsDType::BF16
//   to_cannl_dtype(SafetensorsDType::F8_E5M2) == ir::DType::FP8
//   decode_to_f64(SafetensorsDType::I16, bytes)   // one double per element

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "cannl/ir/dtype.h"

namespace cannl::io {

/// Every dtype the safetensors format defines (names as in the file: "F32", "F8_E5M2", ...).
enum class SafetensorsDType : unsigned char {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64
};

inline constexpr SafetensorsDType kAllSafetensorsDTypes[] = {
    SafetensorsDType::BOOL, SafetensorsDType::U8,   SafetensorsDType::I8,
    SafetensorsDType::F8_E5M2, SafetensorsDType::F8_E4M3, SafetensorsDType::I16,
    SafetensorsDType::U16,  SafetensorsDType::F16,  SafetensorsDType::BF16,
    SafetensorsDType::I32,  SafetensorsDType::U32,  SafetensorsDType::F32,
    SafetensorsDType::I64,  SafetensorsDType::U64,  SafetensorsDType::F64};

/// The name written in headers.   safetensors_dtype_name(SafetensorsDType::F16) == "F16"
std::string_view safetensors_dtype_name(SafetensorsDType dtype);
/// Parses a header dtype name (case-sensitive, as the format requires); nullopt when unknown.
///   safetensors_dtype_from_name("F8_E4M3") == SafetensorsDType::F8_E4M3
std::optional<SafetensorsDType> safetensors_dtype_from_name(std::string_view name);
/// Bytes per element.   safetensors_dtype_bytes(SafetensorsDType::BF16) == 2
std::size_t safetensors_dtype_bytes(SafetensorsDType dtype);

/// The cannl dtype with the same storage format, or nullopt (BOOL, I8, I16, U16, F8_E4M3 have
/// none: read them raw or through decode_to_f32 / decode_to_f64).
///   to_cannl_dtype(SafetensorsDType::F32) == ir::DType::F32
std::optional<ir::DType> to_cannl_dtype(SafetensorsDType dtype);
/// The safetensors dtype storing a cannl dtype bit for bit; nullopt for U4x32 (checkpoints store
/// it as U32 with a trailing axis of 4 words).
///   to_safetensors_dtype(ir::DType::FP8) == SafetensorsDType::F8_E5M2
std::optional<SafetensorsDType> to_safetensors_dtype(ir::DType dtype);

/// Decodes a little-endian payload to doubles: exact for every dtype except 64-bit integers
/// beyond 2^53, which round. BOOL bytes must be 0 or 1 and F8_E4M3 is the "FN" variant (no
/// infinities, S.1111.111 is NaN, max 448), as in PyTorch and ml_dtypes. Throws FormatError
/// when the byte count is not a multiple of the element size or a BOOL byte is not 0/1.
///   decode_to_f64(SafetensorsDType::F16, {0x00, 0x3C}) == {1.0}
std::vector<double> decode_to_f64(SafetensorsDType dtype, std::span<const std::byte> bytes);
/// The same values rounded to float, once (exact for every dtype of 16 bits or fewer and for
/// F32; 64-bit integers convert directly, not through a double, which would round twice).
///   decode_to_f32(SafetensorsDType::I64, bytes of 2^60 + 2^36 + 1) == {0x1p60f + 0x1p37f}
std::vector<float> decode_to_f32(SafetensorsDType dtype, std::span<const std::byte> bytes);
/// Encodes doubles as a little-endian payload: floats round to nearest even (F8_E4M3 saturates
/// to +-448, F8_E5M2 to +-57344), integers truncate toward zero and saturate, NaN -> 0, BOOL is
/// value != 0.
///   encode_from_f64(SafetensorsDType::U8, {300.0}) == {std::byte{255}}
std::vector<std::byte> encode_from_f64(SafetensorsDType dtype, std::span<const double> values);

/// fp8 E4M3FN (1 sign, 4 exponent bits with bias 7, 3 mantissa bits) to float; exact.
///   f8_e4m3_to_f32(0x38) == 1.0f;  f8_e4m3_to_f32(0x7E) == 448.0f;  isnan(f8_e4m3_to_f32(0x7F))
float f8_e4m3_to_f32(std::uint8_t bits);
/// Float to E4M3FN, nearest even, saturating finite overflow and infinities to +-448; NaN -> 0x7F.
///   f64_to_f8_e4m3(1.0) == 0x38;  f64_to_f8_e4m3(1e9) == 0x7E
std::uint8_t f64_to_f8_e4m3(double value);

}  // namespace cannl::io
