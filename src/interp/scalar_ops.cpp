// Semantics of every op of ops.def on float and integer compute dtypes (the reference the C
// spellings of ops.def must match). Argument conversion and dispatch live in apply_op.cpp.
#include "interp/scalar_ops.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "cannl/ir/own_math.h"
#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"

namespace cannl::interp::detail {

using ir::Op;

namespace {

// The libm function of each precision, named explicitly: f32 ops must call the float variants
// (expf, not exp) exactly as the generated C does; f32 exp and tanh are cannl's own.
template <class T>
struct Libm;
// Max and min as IEEE 754-2019 maximumNumber / minimumNumber: a NaN operand loses, and +0 is
// above -0. C leaves the sign of fmax(-0, +0) to the implementation (and compilers pick either
// depending on the surrounding code), so every backend spells these out (C: cannl_fmaxf ...).
template <class T>
T maximum_number(T a, T b) {
  if (a > b || b != b) return a;
  if (b > a || a != a) return b;
  return std::signbit(a) ? b : a;
}
template <class T>
T minimum_number(T a, T b) {
  if (a < b || b != b) return a;
  if (b < a || a != a) return b;
  return std::signbit(a) ? a : b;
}

template <>
struct Libm<float> {
  // cannl's own: the generated C calls the same sequence of operations (ir/own_math.h).
  static float exp(float x) { return ir::own_expf(x); }
  static float log(float x) { return ::logf(x); }
  static float exp2(float x) { return ::exp2f(x); }
  static float log2(float x) { return ::log2f(x); }
  static float sin(float x) { return ::sinf(x); }
  static float cos(float x) { return ::cosf(x); }
  static float sqrt(float x) { return ::sqrtf(x); }
  static float tanh(float x) { return ir::own_tanhf(x); }
  // trunc quiets a signaling NaN (an arithmetic operation, IEEE 754 6.2), as the generated code's
  // roundss / frintz do; GCC's inline truncf without SSE4.1 would keep it signaling.
  static float trunc(float x) { return x != x ? x + x : ::truncf(x); }
  static float pow(float x, float y) { return ::powf(x, y); }
  static float fmax(float x, float y) { return maximum_number(x, y); }
  static float fmin(float x, float y) { return minimum_number(x, y); }
  static float fmod(float x, float y) { return ::fmodf(x, y); }
  static float fma(float x, float y, float z) { return ::fmaf(x, y, z); }
};
template <>
struct Libm<double> {
  static double exp(double x) { return ::exp(x); }
  static double log(double x) { return ::log(x); }
  static double exp2(double x) { return ::exp2(x); }
  static double log2(double x) { return ::log2(x); }
  static double sin(double x) { return ::sin(x); }
  static double cos(double x) { return ::cos(x); }
  static double sqrt(double x) { return ::sqrt(x); }
  static double tanh(double x) { return ::tanh(x); }
  static double trunc(double x) { return x != x ? x + x : ::trunc(x); }
  static double pow(double x, double y) { return ::pow(x, y); }
  static double fmax(double x, double y) { return maximum_number(x, y); }
  static double fmin(double x, double y) { return minimum_number(x, y); }
  static double fmod(double x, double y) { return ::fmod(x, y); }
  static double fma(double x, double y, double z) { return ::fma(x, y, z); }
};

[[noreturn]] void undefined_op(Op op, const char* kind) {
  throw InternalError("op " + std::string(ir::op_name(op)) + " is undefined for " + kind +
                      " compute dtypes");
}

template <class T>
T float_unary(Op op, T x) {
  using M = Libm<T>;
  switch (op) {
    case Op::Identity: return x;
    case Op::Relu: return x > 0 ? x : T(0);
    case Op::Satur01: return M::fmin(M::fmax(x, T(0)), T(1));
    case Op::Exp: return M::exp(x);
    case Op::Log: return M::log(x);
    case Op::Exp2: return M::exp2(x);
    case Op::Log2: return M::log2(x);
    case Op::Sin: return M::sin(x);
    case Op::Cos: return M::cos(x);
    case Op::Sqrt: return M::sqrt(x);
    case Op::Recip: return T(1) / x;
    case Op::RecipSqrt: return T(1) / M::sqrt(x);
    case Op::Neg: return -x;
    case Op::Trunc: return M::trunc(x);
    case Op::Tanh: return M::tanh(x);
    case Op::Not: return x == 0 ? T(1) : T(0);
    case Op::RoundBf16: return round_to_bf16(x);
    case Op::RoundF16: return round_to_f16(x);
    case Op::RoundTf32: return round_to_tf32(x);
    case Op::RoundFp8: return round_to_fp8(x);
    default: undefined_op(op, "unary float");
  }
}

template <class T>
T float_binary(Op op, T a, T b) {
  using M = Libm<T>;
  switch (op) {
    case Op::Arg1: return a;
    case Op::Arg2: return b;
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Pow: return M::pow(a, b);
    case Op::ReluGate: return a > 0 ? b : T(0);
    case Op::Satur01Gate: return (a > 0 && a < 1) ? b : T(0);
    case Op::Max: return M::fmax(a, b);
    case Op::Min: return M::fmin(a, b);
    case Op::Mod: return M::fmod(a, b);
    case Op::Cmplt: return a < b ? T(1) : T(0);
    case Op::Cmpeq: return a == b ? T(1) : T(0);
    case Op::Cmpne: return a != b ? T(1) : T(0);
    case Op::Or: return (a != 0 || b != 0) ? T(1) : T(0);
    case Op::And: return (a != 0 && b != 0) ? T(1) : T(0);
    default: undefined_op(op, "binary float");
  }
}

template <class T>
T float_ternary(Op op, T a, T b, T c) {
  switch (op) {
    case Op::Where: return a != 0 ? b : c;
    case Op::Fma: return Libm<T>::fma(a, b, c);
    case Op::Mul3: return a * b * c;
    default: undefined_op(op, "ternary float");
  }
}

// Wrapping arithmetic: computed in the unsigned type of the same width (no signed overflow,
// which is UB), then cast back (modular since C++20).
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

// C's / and % (truncating, remainder has the dividend's sign) made total: x/0 == x%0 == 0 and
// MIN / -1 == MIN, MIN % -1 == 0.
template <class T>
T safe_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
  return static_cast<T>(a / b);
}
template <class T>
T safe_mod(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return 0;
  return static_cast<T>(a % b);
}

template <class T>
T int_unary(Op op, T x) {
  switch (op) {
    case Op::Identity:
    case Op::Trunc: return x;
    case Op::Relu: return x > 0 ? x : T(0);
    case Op::Satur01: return x < 0 ? T(0) : (x > 1 ? T(1) : x);
    case Op::Neg: return wrap_sub(T(0), x);
    case Op::Not: return x == 0 ? T(1) : T(0);
    default: undefined_op(op, "integer");
  }
}

template <class T>
T int_binary(Op op, T a, T b) {
  switch (op) {
    case Op::Arg1: return a;
    case Op::Arg2: return b;
    case Op::Add: return wrap_add(a, b);
    case Op::Sub: return wrap_sub(a, b);
    case Op::Mul: return wrap_mul(a, b);
    case Op::Div: return safe_div(a, b);
    case Op::ReluGate: return a > 0 ? b : T(0);
    // (a > 0 && a < 1) ? b : 0, and no integer lies strictly between 0 and 1.
    case Op::Satur01Gate: return T(0);
    case Op::Max: return a > b ? a : b;
    case Op::Min: return a < b ? a : b;
    case Op::Mod: return safe_mod(a, b);
    case Op::Cmplt: return a < b ? T(1) : T(0);
    case Op::Cmpeq: return a == b ? T(1) : T(0);
    case Op::Cmpne: return a != b ? T(1) : T(0);
    case Op::Or: return (a != 0 || b != 0) ? T(1) : T(0);
    case Op::And: return (a != 0 && b != 0) ? T(1) : T(0);
    default: undefined_op(op, "integer");
  }
}

template <class T>
T int_ternary(Op op, T a, T b, T c) {
  switch (op) {
    case Op::Where: return a != 0 ? b : c;
    case Op::Fma: return wrap_add(wrap_mul(a, b), c);
    case Op::Mul3: return wrap_mul(wrap_mul(a, b), c);
    default: undefined_op(op, "integer");
  }
}

}  // namespace

template <class T>
T compute(Op op, std::span<const T> args) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (args.size()) {
      case 1: return float_unary(op, args[0]);
      case 2: return float_binary(op, args[0], args[1]);
      case 3: return float_ternary(op, args[0], args[1], args[2]);
      default: break;
    }
  } else {
    switch (args.size()) {
      case 1: return int_unary(op, args[0]);
      case 2: return int_binary(op, args[0], args[1]);
      case 3: return int_ternary(op, args[0], args[1], args[2]);
      default: break;
    }
  }
  throw InternalError("compute: bad argument count for " + std::string(ir::op_name(op)));
}

template float compute(Op, std::span<const float>);
template double compute(Op, std::span<const double>);
template std::int32_t compute(Op, std::span<const std::int32_t>);
template std::int64_t compute(Op, std::span<const std::int64_t>);
template std::uint32_t compute(Op, std::span<const std::uint32_t>);
template std::uint64_t compute(Op, std::span<const std::uint64_t>);
template std::uint8_t compute(Op, std::span<const std::uint8_t>);

}  // namespace cannl::interp::detail
