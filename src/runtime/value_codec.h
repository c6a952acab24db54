#pragma once
// Host-side conversion between doubles and a node's storage format, used by get_values and
// set_values. Narrow floats go through the bit-exact support codecs (rounding to nearest even,
// once, straight from f64). Doubles convert to integers as the loop IR does (loop_ir.h): truncate
// toward zero, saturate, NaN -> 0.
//
// u4x32 (128-bit PRNG values) has no faithful double form: storing v writes the words
// {low 32 bits, high 32 bits, 0, 0} of v as an int64 (so small values are {v, 0, 0, 0}); loading
// returns the low 64 bits (words 0 and 1) as an unsigned integer converted to double. Use
// get_bytes / set_bytes for exact 128-bit values.
//
//   std::byte cell[2];  store_value(DType::BF16, 1.0, cell);  load_value(DType::BF16, cell) == 1.0

#include <cstddef>

#include "cannl/ir/dtype.h"

namespace cannl::runtime {

/// Reads one element of type `dtype` at `cell` (dtype_bytes(dtype) bytes) as a double.
double load_value(ir::DType dtype, const std::byte* cell);
/// Writes `value` converted to `dtype` at `cell`.
void store_value(ir::DType dtype, double value, std::byte* cell);

}  // namespace cannl::runtime
