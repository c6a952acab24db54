#pragma once
// Reading and writing one element of a buffer in its storage format: f16/bf16 as 16-bit
// patterns, fp8 as one byte, u4x32 as four little-endian u32 words, everything else native.
//
//   store_element(DType::BF16, bytes, 3, Value::narrow(DType::BF16, 1.0f));  // writes 0x3F80
//   load_element(DType::BF16, bytes, 3).get<float>() == 1.0f

#include <cstddef>
#include <cstdint>
#include <span>

#include "cannl/interp/value.h"
#include "cannl/ir/dtype.h"

namespace cannl::interp {

/// Element `element` of a buffer of `dtype` cells, decoded to a Value of `dtype`.
/// Throws InternalError when the element lies outside `buffer`.
Value load_element(ir::DType dtype, std::span<const std::byte> buffer, std::int64_t element);

/// Encodes `value` (which must already have `dtype`; see convert) into element `element`.
/// Throws InternalError on a dtype mismatch or when the element lies outside `buffer`.
void store_element(ir::DType dtype, std::span<std::byte> buffer, std::int64_t element,
                   const Value& value);

}  // namespace cannl::interp
