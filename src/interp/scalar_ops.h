#pragma once
// Internal: the op table's semantics on one compute type, arguments already converted.
//
//   float args[] = {1.0f, 2.0f};  detail::compute<float>(Op::Add, args) == 3.0f

#include <cstdint>
#include <span>

#include "cannl/ir/ops.h"

namespace cannl::interp::detail {

/// `op` applied to `args` (1 to 3 values, all of compute type T: float, double or an integer
/// type of the interpreter). Throws InternalError when `op` is undefined for T.
template <class T>
T compute(ir::Op op, std::span<const T> args);

}  // namespace cannl::interp::detail
