// Evaluation of one Apply: argument conversion to the compute dtype and dispatch by dtype.
#include <string>
#include <vector>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"
#include "interp/scalar_ops.h"

namespace cannl::interp {

using ir::DType;
using ir::Op;

namespace {

std::string apply_text(Op op, DType dtype) {
  return std::string(ir::op_name(op)) + " in " + std::string(ir::dtype_name(dtype));
}

// Converts every argument to T's dtype and runs the op table on them.
template <class T>
Value compute_in(Op op, DType compute, std::span<const Value> args) {
  std::vector<T> converted;
  converted.reserve(args.size());
  for (const Value& a : args) converted.push_back(convert(a, compute).get<T>());
  return Value::of(detail::compute<T>(op, std::span<const T>(converted)));
}

Value apply_threefry(Op op, DType dtype, std::span<const Value> args) {
  const ir::Uint4x32 key = convert(args[0], DType::U4x32).get<ir::Uint4x32>();
  const ir::Uint4x32 counter = convert(args[1], DType::U4x32).get<ir::Uint4x32>();
  const Value bits = Value::of(op == Op::ThreefryCrypto ? threefry4x32_crypto(key, counter)
                                                        : threefry4x32_light(key, counter));
  return convert(bits, dtype);
}

// Where's condition keeps its own dtype (a u4x32 has no C truth value); only the selected
// branch is converted.
Value apply_where(DType compute, std::span<const Value> args) {
  internal_check(args[0].dtype != DType::U4x32, "apply: where's condition cannot be u4x32");
  return convert(is_nonzero(args[0]) ? args[1] : args[2], compute);
}

// The op in `compute` (f64, f32, an integer type or u4x32) on arguments converted to it.
Value compute_op(Op op, DType compute, std::span<const Value> args) {
  switch (compute) {
    case DType::F64: return compute_in<double>(op, compute, args);
    case DType::F32: return compute_in<float>(op, compute, args);
    case DType::I32: return compute_in<std::int32_t>(op, compute, args);
    case DType::I64: return compute_in<std::int64_t>(op, compute, args);
    case DType::U32: return compute_in<std::uint32_t>(op, compute, args);
    case DType::U64: return compute_in<std::uint64_t>(op, compute, args);
    case DType::U8: return compute_in<std::uint8_t>(op, compute, args);
    case DType::U4x32: break;
    default: throw InternalError("apply: no compute dtype for " + apply_text(op, compute));
  }
  switch (op) {  // ops on u4x32 other than threefry only move values around
    case Op::Identity:
    case Op::Arg1: return convert(args[0], DType::U4x32);
    case Op::Arg2: return convert(args[1], DType::U4x32);
    default: throw InternalError("apply: " + apply_text(op, DType::U4x32) + " is undefined");
  }
}

}  // namespace

Value apply_op(Op op, DType dtype, std::span<const Value> args) {
  internal_check(static_cast<int>(args.size()) == ir::op_arity(op), [&] {
    return "apply: " + apply_text(op, dtype) + " got " + std::to_string(args.size()) + " arguments";
  });
  if (op == Op::Uniform1) {
    internal_check(args[0].dtype == DType::U4x32,
                   [&] { return "apply: uniform1 needs a u4x32 argument, got " + to_string(args[0]); });
    return uniform1(args[0].get<ir::Uint4x32>(), dtype);
  }
  if (op == Op::ThreefryCrypto || op == Op::ThreefryLight) return apply_threefry(op, dtype, args);
  // Narrow dtypes compute in f32; the result is then rounded to the narrow dtype (as the C
  // backend does), so every scalar's value is representable in its dtype.
  const DType compute = ir::compute_dtype(dtype);
  const Value result = op == Op::Where ? apply_where(compute, args) : compute_op(op, compute, args);
  return convert(result, dtype);
}

}  // namespace cannl::interp
