// Zero values, truth tests, printing and bit equality of interpreter values.
#include "cannl/interp/value.h"

#include <cstring>
#include <sstream>
#include <type_traits>

#include "cannl/support/error.h"

namespace cannl::interp {

using ir::DType;

Value zero_value(DType dtype) {
  switch (dtype) {
    case DType::F64: return Value::of(0.0);
    case DType::F32: return Value::of(0.0f);
    case DType::F16:
    case DType::BF16:
    case DType::FP8: return Value::narrow(dtype, 0.0f);
    case DType::I32: return Value::of(std::int32_t{0});
    case DType::I64: return Value::of(std::int64_t{0});
    case DType::U32: return Value::of(std::uint32_t{0});
    case DType::U64: return Value::of(std::uint64_t{0});
    case DType::U8: return Value::of(std::uint8_t{0});
    case DType::U4x32: return Value::of(ir::Uint4x32{{0, 0, 0, 0}});
  }
  throw InternalError("zero_value: unknown dtype");
}

bool is_nonzero(const Value& v) {
  return std::visit(
      [](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::Uint4x32>)
          return (x.v[0] | x.v[1] | x.v[2] | x.v[3]) != 0;
        else
          return x != 0;
      },
      v.data);
}

std::string to_string(const Value& v) {
  std::ostringstream out;
  out << ir::dtype_name(v.dtype) << ' ';
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::Uint4x32>) {
          out << std::hex << "{0x" << x.v[0] << ", 0x" << x.v[1] << ", 0x" << x.v[2] << ", 0x"
              << x.v[3] << '}';
        } else if constexpr (std::is_same_v<T, std::uint8_t>) {
          out << static_cast<unsigned>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
          out.precision(17);
          out << x;
        } else {
          out << x;
        }
      },
      v.data);
  return out.str();
}

bool bit_equal(const Value& a, const Value& b) {
  if (a.dtype != b.dtype || a.data.index() != b.data.index()) return false;
  return std::visit(
      [&b](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T y = std::get<T>(b.data);
        return std::memcmp(&x, &y, sizeof(T)) == 0;
      },
      a.data);
}

}  // namespace cannl::interp
