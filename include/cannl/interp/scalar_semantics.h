#pragma once
// Exact semantics of one scalar step of the loop IR: dtype conversions, every op of ops.def,
// threefry and uniform1. The interpreter is built from these functions; the optimizer's constant
// folding reuses them, so folding computes exactly what the generated C would (loop_ir.h states
// the rules; the C backend implements the same ones, and tests compare the two bit for bit).
//
//   apply_op(Op::Add, DType::I32, {Value::of(INT32_MAX), Value::of(1)})  // i32 INT32_MIN (wraps)
//   convert(Value::of(3e9f), DType::I32)                                 // i32 2147483647
//   convert(Value::of(0.1), DType::BF16)      // rounded once from f64 by f64_to_bf16

#include <cstdint>
#include <span>

#include "cannl/interp/value.h"
#include "cannl/ir/dtype.h"
#include "cannl/ir/ops.h"

namespace cannl::interp {

/// Converts `v` to dtype `to` by the rules of loop_ir.h:
///  * float->float rounds to nearest even; narrow targets through the support codecs, from f64
///    with the f64_to_* codec (one rounding), from f32 or a narrow float with f32_to_*;
///  * int->f32/f64 is a C cast; int->narrow float goes through f64;
///  * float->int truncates toward zero and saturates to the target range; NaN -> 0;
///  * int->int is a C cast (wraps);
///  * x->u4x32 = {low 32, high 32, 0, 0} of x as i64 (u64 keeps its bits; floats saturate to i64);
///  * u4x32->x = the low 64 bits as u64, then converted from u64.
/// convert(Value::of(-1.5f), DType::U32) is u32 0.
Value convert(const Value& v, ir::DType to);

/// The value of `Constant{value, dtype}`: the f64 `value` converted to `dtype`.
/// constant_value(0.1, DType::F32).get<float>() == 0.1f
Value constant_value(double value, ir::DType dtype);

/// The value of `ConstantBits{bits, dtype}`: the i64 `bits` converted to `dtype`
/// (u64 and u4x32 keep all 64 bits). constant_bits_value(-1, DType::U64) is u64 0xFFFF...FF.
Value constant_bits_value(std::int64_t bits, ir::DType dtype);

/// Evaluates `Apply{op, dtype, args}` on already evaluated arguments (each in its own dtype).
/// Arguments are converted to compute_dtype(dtype) first, except Where's condition (tested != 0
/// in its own dtype; u4x32 is refused), Uniform1's argument (must be u4x32) and threefry's
/// (converted to u4x32). The result is converted to `dtype`: narrow floats compute in f32 and
/// round the result once; threefry's u4x32 result converts like any value. Integer ops wrap;
/// integer Div/Mod by zero give 0; INT_MIN / -1 == INT_MIN and INT_MIN % -1 == 0. Throws
/// InternalError for an op undefined in the compute dtype (e.g. Exp on i32) or a wrong arity.
/// apply_op(Op::Div, DType::I32, {Value::of(7), Value::of(0)}) is i32 0.
Value apply_op(ir::Op op, ir::DType dtype, std::span<const Value> args);

/// Threefry-4x32 with `rounds` rounds (Random123): key injection after every fourth round.
/// threefry4x32({0,0,0,0}, {0,0,0,0}, 20) == {0x9c6ca96a, 0xe17eae66, 0xfc10ecd4, 0x5256a7d8}
ir::Uint4x32 threefry4x32(ir::Uint4x32 key, ir::Uint4x32 counter, int rounds);

/// Op::ThreefryCrypto: 20 rounds. Arguments are (key, counter), as in the Apply.
ir::Uint4x32 threefry4x32_crypto(ir::Uint4x32 key, ir::Uint4x32 counter);

/// Op::ThreefryLight: 2 rounds followed by one key injection (s = 1).
ir::Uint4x32 threefry4x32_light(ir::Uint4x32 key, ir::Uint4x32 counter);

/// Op::Uniform1: one value of `dtype` from 128 random bits. Floats are in [0, 1): f32 =
/// (v[0] >> 8) * 2^-24 (narrow floats: that f32, rounded to the narrow dtype, so possibly 1);
/// f64 = (low 64 bits >> 11) * 2^-53. Integers
/// take the full range: i32/u32 = v[0], i64/u64 = low 64 bits, u8 = v[0] & 0xFF.
/// uniform1({0xFFFFFFFF, 0, 0, 0}, DType::F32).get<float>() == 1 - 0x1p-24f
Value uniform1(ir::Uint4x32 bits, ir::DType dtype);

}  // namespace cannl::interp
