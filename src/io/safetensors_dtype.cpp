// Safetensors element types: names, sizes, the cannl dtypes sharing their storage format, and
// host conversions. Payloads are little-endian; the host is too (checked at compile time), so
// elements are copied with memcpy.
#include "cannl/io/safetensors_dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"
#include "cannl/support/saturate.h"

namespace cannl::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors payloads are little-endian; a big-endian host needs byte swaps here");

namespace {

struct DTypeRow {
  SafetensorsDType dtype;
  std::string_view name;
  std::size_t bytes;
  std::optional<ir::DType> cannl;
};

constexpr DTypeRow kRows[] = {
    {SafetensorsDType::BOOL, "BOOL", 1, std::nullopt},
    {SafetensorsDType::U8, "U8", 1, ir::DType::U8},
    {SafetensorsDType::I8, "I8", 1, std::nullopt},
    {SafetensorsDType::F8_E5M2, "F8_E5M2", 1, ir::DType::FP8},
    {SafetensorsDType::F8_E4M3, "F8_E4M3", 1, std::nullopt},
    {SafetensorsDType::I16, "I16", 2, std::nullopt},
    {SafetensorsDType::U16, "U16", 2, std::nullopt},
    {SafetensorsDType::F16, "F16", 2, ir::DType::F16},
    {SafetensorsDType::BF16, "BF16", 2, ir::DType::BF16},
    {SafetensorsDType::I32, "I32", 4, ir::DType::I32},
    {SafetensorsDType::U32, "U32", 4, ir::DType::U32},
    {SafetensorsDType::F32, "F32", 4, ir::DType::F32},
    {SafetensorsDType::I64, "I64", 8, ir::DType::I64},
    {SafetensorsDType::U64, "U64", 8, ir::DType::U64},
    {SafetensorsDType::F64, "F64", 8, ir::DType::F64},
};
static_assert(std::size(kRows) == std::size(kAllSafetensorsDTypes));

const DTypeRow& row_of(SafetensorsDType dtype) {
  for (const DTypeRow& row : kRows) {
    if (row.dtype == dtype) return row;
  }
  throw InternalError("unknown safetensors dtype " + std::to_string(static_cast<int>(dtype)));
}

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

template <typename T>
void store(std::byte* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

double decode_one(SafetensorsDType dtype, const std::byte* at, std::size_t index) {
  switch (dtype) {
    case SafetensorsDType::BOOL: {
      auto byte = load<std::uint8_t>(at);
      if (byte > 1)
        throw FormatError("BOOL element " + std::to_string(index) + " holds byte " +
                          std::to_string(byte) + " (must be 0 or 1)");
      return byte;
    }
    case SafetensorsDType::U8: return load<std::uint8_t>(at);
    case SafetensorsDType::I8: return load<std::int8_t>(at);
    case SafetensorsDType::F8_E5M2: return fp8_to_f32(load<std::uint8_t>(at));
    case SafetensorsDType::F8_E4M3: return f8_e4m3_to_f32(load<std::uint8_t>(at));
    case SafetensorsDType::I16: return load<std::int16_t>(at);
    case SafetensorsDType::U16: return load<std::uint16_t>(at);
    case SafetensorsDType::F16: return f16_to_f32(load<std::uint16_t>(at));
    case SafetensorsDType::BF16: return bf16_to_f32(load<std::uint16_t>(at));
    case SafetensorsDType::I32: return load<std::int32_t>(at);
    case SafetensorsDType::U32: return load<std::uint32_t>(at);
    case SafetensorsDType::F32: return load<float>(at);
    case SafetensorsDType::I64: return static_cast<double>(load<std::int64_t>(at));
    case SafetensorsDType::U64: return static_cast<double>(load<std::uint64_t>(at));
    case SafetensorsDType::F64: return load<double>(at);
  }
  throw InternalError("unhandled safetensors dtype in decode_one");
}

/// One element as a float, rounded once. A 64-bit integer converts directly: through double it
/// would round twice (2^60 + 2^36 + 1 -> 2^60 + 2^36, a tie -> 2^60, where the float nearest is
/// 2^60 + 2^37). Every other dtype is exact as a double, so its one rounding is double -> float.
float decode_one_f32(SafetensorsDType dtype, const std::byte* at, std::size_t index) {
  if (dtype == SafetensorsDType::I64) return static_cast<float>(load<std::int64_t>(at));
  if (dtype == SafetensorsDType::U64) return static_cast<float>(load<std::uint64_t>(at));
  return static_cast<float>(decode_one(dtype, at, index));
}

/// decode(dtype, element at k, k) for every element of `bytes`, which must be whole elements.
template <typename T, typename Decode>
std::vector<T> decode_all(SafetensorsDType dtype, std::span<const std::byte> bytes, Decode decode) {
  const std::size_t size = safetensors_dtype_bytes(dtype);
  if (bytes.size() % size != 0)
    throw FormatError(std::to_string(bytes.size()) + " bytes are not a whole number of " +
                      std::string(safetensors_dtype_name(dtype)) + " elements");
  std::vector<T> values(bytes.size() / size);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = decode(dtype, bytes.data() + k * size, k);
  return values;
}

void encode_one(SafetensorsDType dtype, double value, std::byte* at) {
  switch (dtype) {
    case SafetensorsDType::BOOL: return store<std::uint8_t>(at, value != 0 && !std::isnan(value));
    case SafetensorsDType::U8: return store(at, saturating_trunc<std::uint8_t>(value));
    case SafetensorsDType::I8: return store(at, saturating_trunc<std::int8_t>(value));
    case SafetensorsDType::F8_E5M2: return store(at, f64_to_fp8(value));
    case SafetensorsDType::F8_E4M3: return store(at, f64_to_f8_e4m3(value));
    case SafetensorsDType::I16: return store(at, saturating_trunc<std::int16_t>(value));
    case SafetensorsDType::U16: return store(at, saturating_trunc<std::uint16_t>(value));
    case SafetensorsDType::F16: return store(at, f64_to_f16(value));
    case SafetensorsDType::BF16: return store(at, f64_to_bf16(value));
    case SafetensorsDType::I32: return store(at, saturating_trunc<std::int32_t>(value));
    case SafetensorsDType::U32: return store(at, saturating_trunc<std::uint32_t>(value));
    case SafetensorsDType::F32: return store(at, static_cast<float>(value));
    case SafetensorsDType::I64: return store(at, saturating_trunc<std::int64_t>(value));
    case SafetensorsDType::U64: return store(at, saturating_trunc<std::uint64_t>(value));
    case SafetensorsDType::F64: return store(at, value);
  }
  throw InternalError("unhandled safetensors dtype in encode_one");
}

}  // namespace

std::string_view safetensors_dtype_name(SafetensorsDType dtype) { return row_of(dtype).name; }

std::optional<SafetensorsDType> safetensors_dtype_from_name(std::string_view name) {
  for (const DTypeRow& row : kRows) {
    if (row.name == name) return row.dtype;
  }
  return std::nullopt;
}

std::size_t safetensors_dtype_bytes(SafetensorsDType dtype) { return row_of(dtype).bytes; }

std::optional<ir::DType> to_cannl_dtype(SafetensorsDType dtype) { return row_of(dtype).cannl; }

std::optional<SafetensorsDType> to_safetensors_dtype(ir::DType dtype) {
  for (const DTypeRow& row : kRows) {
    if (row.cannl == dtype) return row.dtype;
  }
  return std::nullopt;
}

std::vector<double> decode_to_f64(SafetensorsDType dtype, std::span<const std::byte> bytes) {
  return decode_all<double>(dtype, bytes, decode_one);
}

std::vector<float> decode_to_f32(SafetensorsDType dtype, std::span<const std::byte> bytes) {
  return decode_all<float>(dtype, bytes, decode_one_f32);
}

std::vector<std::byte> encode_from_f64(SafetensorsDType dtype, std::span<const double> values) {
  const std::size_t size = safetensors_dtype_bytes(dtype);
  std::vector<std::byte> bytes(values.size() * size);
  for (std::size_t k = 0; k < values.size(); ++k) encode_one(dtype, values[k], bytes.data() + k * size);
  return bytes;
}

float f8_e4m3_to_f32(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

std::uint8_t f64_to_f8_e4m3(double value) {
  if (std::isnan(value)) return 0x7F;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const double magnitude = std::fabs(value);
  if (magnitude > 448.0) return sign | 0x7E;  // saturate: E4M3FN has no infinity
  // The spacing of representable values around `magnitude`: 2^(e-3) for normals, 2^-9 below.
  const int exponent = magnitude == 0 ? -7 : std::ilogb(magnitude);
  const double quantum = std::ldexp(1.0, std::max(exponent, -6) - 3);
  const double rounded = std::nearbyint(magnitude / quantum) * quantum;  // ties to even
  if (rounded == 0) return sign;
  const int e = std::ilogb(rounded);
  if (e < -6) return sign | static_cast<std::uint8_t>(std::ldexp(rounded, 9));
  const auto mantissa = static_cast<std::uint8_t>(std::ldexp(rounded, 3 - e) - 8);
  return sign | static_cast<std::uint8_t>((e + 7) << 3) | mantissa;
}

}  // namespace cannl::io
