// One buffer element in storage format <-> interpreter Value.
#include "cannl/interp/storage.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"

namespace cannl::interp {

using ir::DType;

namespace {

void check_in_buffer(DType dtype, std::size_t buffer_bytes, std::int64_t element) {
  const auto bytes = static_cast<std::int64_t>(ir::dtype_bytes(dtype));
  internal_check(element >= 0 && (element + 1) * bytes <= static_cast<std::int64_t>(buffer_bytes), [&] {
    return "element " + std::to_string(element) + " of a " + std::string(ir::dtype_name(dtype)) + " buffer of " +
           std::to_string(buffer_bytes) + " bytes is out of range";
  });
}

// memcpy: buffers carry no alignment guarantee for their element type.
template <class T>
T read_as(std::span<const std::byte> buffer, std::int64_t element) {
  T x;
  std::memcpy(&x, buffer.data() + element * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
  return x;
}

template <class T>
void write_as(std::span<std::byte> buffer, std::int64_t element, T x) {
  std::memcpy(buffer.data() + element * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
}

}  // namespace

Value load_element(DType dtype, std::span<const std::byte> buffer, std::int64_t element) {
  check_in_buffer(dtype, buffer.size(), element);
  switch (dtype) {
    case DType::F64: return Value::of(read_as<double>(buffer, element));
    case DType::F32: return Value::of(read_as<float>(buffer, element));
    case DType::F16:
      return Value::narrow(dtype, f16_to_f32(read_as<std::uint16_t>(buffer, element)));
    case DType::BF16:
      return Value::narrow(dtype, bf16_to_f32(read_as<std::uint16_t>(buffer, element)));
    case DType::FP8:
      return Value::narrow(dtype, fp8_to_f32(read_as<std::uint8_t>(buffer, element)));
    case DType::I32: return Value::of(read_as<std::int32_t>(buffer, element));
    case DType::I64: return Value::of(read_as<std::int64_t>(buffer, element));
    case DType::U32: return Value::of(read_as<std::uint32_t>(buffer, element));
    case DType::U64: return Value::of(read_as<std::uint64_t>(buffer, element));
    case DType::U8: return Value::of(read_as<std::uint8_t>(buffer, element));
    case DType::U4x32: return Value::of(read_as<ir::Uint4x32>(buffer, element));
  }
  throw InternalError("load_element: unknown dtype");
}

void store_element(DType dtype, std::span<std::byte> buffer, std::int64_t element,
                   const Value& value) {
  internal_check(value.dtype == dtype, [&] {
    return "store_element: storing " + to_string(value) + " into a " + std::string(ir::dtype_name(dtype)) +
           " buffer (convert first)";
  });
  check_in_buffer(dtype, buffer.size(), element);
  switch (dtype) {
    case DType::F64: return write_as(buffer, element, value.get<double>());
    case DType::F32: return write_as(buffer, element, value.get<float>());
    // Narrow values are exactly representable, so re-encoding them is exact.
    case DType::F16: return write_as(buffer, element, f32_to_f16(value.get<float>()));
    case DType::BF16: return write_as(buffer, element, f32_to_bf16(value.get<float>()));
    case DType::FP8: return write_as(buffer, element, f32_to_fp8(value.get<float>()));
    case DType::I32: return write_as(buffer, element, value.get<std::int32_t>());
    case DType::I64: return write_as(buffer, element, value.get<std::int64_t>());
    case DType::U32: return write_as(buffer, element, value.get<std::uint32_t>());
    case DType::U64: return write_as(buffer, element, value.get<std::uint64_t>());
    case DType::U8: return write_as(buffer, element, value.get<std::uint8_t>());
    case DType::U4x32: return write_as(buffer, element, value.get<ir::Uint4x32>());
  }
}

}  // namespace cannl::interp
