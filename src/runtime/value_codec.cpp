#include "runtime/value_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"
#include "cannl/support/saturate.h"

namespace cannl::runtime {

namespace {

template <typename T>
T load_as(const std::byte* cell) {
  T value;
  std::memcpy(&value, cell, sizeof(T));
  return value;
}

template <typename T>
void store_as(T value, std::byte* cell) {
  std::memcpy(cell, &value, sizeof(T));
}

}  // namespace

double load_value(ir::DType dtype, const std::byte* cell) {
  using ir::DType;
  switch (dtype) {
    case DType::F64: return load_as<double>(cell);
    case DType::F32: return load_as<float>(cell);
    case DType::F16: return f16_to_f32(load_as<std::uint16_t>(cell));
    case DType::BF16: return bf16_to_f32(load_as<std::uint16_t>(cell));
    case DType::FP8: return fp8_to_f32(load_as<std::uint8_t>(cell));
    case DType::I32: return load_as<std::int32_t>(cell);
    case DType::I64: return static_cast<double>(load_as<std::int64_t>(cell));
    case DType::U32: return load_as<std::uint32_t>(cell);
    case DType::U64: return static_cast<double>(load_as<std::uint64_t>(cell));
    case DType::U8: return load_as<std::uint8_t>(cell);
    case DType::U4x32: return static_cast<double>(load_as<std::uint64_t>(cell));
  }
  throw InternalError("load_value: unknown dtype");
}

void store_value(ir::DType dtype, double value, std::byte* cell) {
  using ir::DType;
  switch (dtype) {
    case DType::F64: return store_as(value, cell);
    case DType::F32: return store_as(static_cast<float>(value), cell);
    case DType::F16: return store_as(f64_to_f16(value), cell);
    case DType::BF16: return store_as(f64_to_bf16(value), cell);
    case DType::FP8: return store_as(f64_to_fp8(value), cell);
    case DType::I32: return store_as(saturating_trunc<std::int32_t>(value), cell);
    case DType::I64: return store_as(saturating_trunc<std::int64_t>(value), cell);
    case DType::U32: return store_as(saturating_trunc<std::uint32_t>(value), cell);
    case DType::U64: return store_as(saturating_trunc<std::uint64_t>(value), cell);
    case DType::U8: return store_as(saturating_trunc<std::uint8_t>(value), cell);
    case DType::U4x32: {
      const auto bits = static_cast<std::uint64_t>(saturating_trunc<std::int64_t>(value));
      const std::uint32_t words[4] = {static_cast<std::uint32_t>(bits),
                                      static_cast<std::uint32_t>(bits >> 32), 0, 0};
      std::memcpy(cell, words, sizeof(words));
      return;
    }
  }
  throw InternalError("store_value: unknown dtype");
}

}  // namespace cannl::runtime
