#pragma once
// The float -> integer rule of the loop IR (cannl/ir/loop_ir.h), for host-side code: truncate
// toward zero, saturate to the integer's range, NaN -> 0. The generated C has its own copy in its
// prelude; the parity tests hold the two together.
//
//   saturating_trunc<std::int32_t>(3e9) == 2147483647;  saturating_trunc<std::uint8_t>(-1.5) == 0

#include <cmath>
#include <limits>
#include <type_traits>

namespace cannl {

/// Both range limits are powers of two, hence exact in double, so no out-of-range cast happens.
template <class Int>
Int saturating_trunc(double x) {
  if (std::isnan(x)) return 0;
  const double t = std::trunc(x);
  const double upper_exclusive = std::ldexp(1.0, std::numeric_limits<Int>::digits);
  const double lower = std::is_signed_v<Int> ? -upper_exclusive : 0.0;
  if (t < lower) return std::numeric_limits<Int>::min();
  if (t >= upper_exclusive) return std::numeric_limits<Int>::max();
  return static_cast<Int>(t);
}

}  // namespace cannl
