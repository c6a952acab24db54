#pragma once
// Checked 64-bit size arithmetic: sizes come from user input (shapes, specs, configs), and a
// wrapped product is a wrong shape printed with exit 0, or a tiny allocation written far past its
// end. Every size computation goes through these; the caller turns nullopt into an error that
// names what overflowed (a ShapeError naming the spec and the axis, a ConfigError naming the key).
//
//   auto n = checked_mul(rows, cols);
//   if (!n) throw ShapeError("rows x cols = " + ... + " overflows");
//   checked_product({1 << 20, 1 << 20, 1 << 30}) == std::nullopt

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

namespace cannl {

/// a + b, or nullopt when it leaves the int64 range.   checked_add(INT64_MAX, 1) == nullopt
constexpr std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a - b, or nullopt when it leaves the int64 range.
constexpr std::optional<std::int64_t> checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a * b, or nullopt when it leaves the int64 range.   checked_mul(1LL << 32, 1LL << 31) == nullopt
constexpr std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// The product of `sizes` (1 when empty), or nullopt when a partial product leaves the int64
/// range. A zero anywhere makes the product 0 even if other factors are huge.
///   checked_product(dims) == 24 for dims {2, 3, 4}
constexpr std::optional<std::int64_t> checked_product(std::span<const std::int64_t> sizes) {
  for (std::int64_t s : sizes)
    if (s == 0) return 0;
  std::int64_t out = 1;
  for (std::int64_t s : sizes) {
    const auto next = checked_mul(out, s);
    if (!next) return std::nullopt;
    out = *next;
  }
  return out;
}
constexpr std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> sizes) {
  return checked_product(std::span<const std::int64_t>(sizes.begin(), sizes.size()));
}

/// a * b + c (the strided / convolution size relations), or nullopt on overflow.
constexpr std::optional<std::int64_t> checked_mul_add(std::int64_t a, std::int64_t b, std::int64_t c) {
  const auto product = checked_mul(a, b);
  return product ? checked_add(*product, c) : std::nullopt;
}

}  // namespace cannl
