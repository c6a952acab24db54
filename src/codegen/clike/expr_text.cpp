// C expression text helpers (see expr_text.h).
#include "codegen/clike/expr_text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace cannl::codegen {

namespace {

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

// Index just past the bracket group opening at `open`, or npos when unbalanced.
std::size_t skip_group(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < s.size(); ++k) {
    if (s[k] == '(' || s[k] == '[' || s[k] == '{') ++depth;
    if (s[k] == ')' || s[k] == ']' || s[k] == '}') {
      if (--depth == 0) return k + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool is_atomic(std::string_view text) {
  if (text.empty()) return false;
  std::size_t k = 0;
  if (text[0] == '(') {
    k = skip_group(text, 0);  // a parenthesized group, possibly followed by subscripts
  } else {
    while (k < text.size() && is_word_char(text[k])) ++k;
    if (k == 0) return false;
  }
  // Postfix chain: calls, subscripts and member accesses.
  while (k != std::string_view::npos && k < text.size()) {
    if (text[k] == '(' || text[k] == '[') {
      k = skip_group(text, k);
    } else if (text[k] == '.') {
      ++k;
      while (k < text.size() && is_word_char(text[k])) ++k;
    } else {
      return false;
    }
  }
  return k == text.size();
}

std::string atom(const std::string& text) { return is_atomic(text) ? text : "(" + text + ")"; }

std::string c_cast(std::string_view type, const std::string& text) {
  return "((" + std::string(type) + ")" + atom(text) + ")";
}

std::string substitute_spelling(std::string_view spelling, const std::vector<std::string>& args,
                                std::string_view libm_suffix, std::string_view int_tag) {
  std::string out;
  for (std::size_t k = 0; k < spelling.size(); ++k) {
    const char c = spelling[k];
    if (c != '$' || k + 1 == spelling.size()) {
      out.push_back(c);
      continue;
    }
    const char d = spelling[++k];
    if (d >= '0' && d <= '2' && static_cast<std::size_t>(d - '0') < args.size()) {
      out += atom(args[static_cast<std::size_t>(d - '0')]);
    } else if (d == 'f') {
      out += libm_suffix;
    } else if (d == 'T') {
      out += int_tag;
    } else {
      out.push_back('$');
      out.push_back(d);
    }
  }
  return out;
}

namespace {

std::string finish_literal(std::string text, bool negative, const char* suffix) {
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  text += suffix;
  return negative ? "(" + text + ")" : text;
}

}  // namespace

namespace {

// A NaN by its bits, `helper(bits)` (the prelude's bit casts, in every dialect): the C macro NAN
// is the positive quiet NaN only, and a constant's sign and payload are part of its value (they
// survive a store, a negation's sign flip, maximumNumber's choice between two NaNs).
template <typename Bits, typename Float>
std::string nan_literal(Float value, const char* helper, const char* suffix) {
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::string digits = std::to_string(bits) + suffix;
  return std::string(helper) + "(" + (bits < 0 ? "(" + digits + ")" : digits) + ")";
}

constexpr std::int32_t kNanBits32 = 0x7fc00000;  // the bits of NAN
constexpr std::int64_t kNanBits64 = 0x7ff8000000000000;  // the bits of (double)NAN

template <typename Bits, typename Float>
bool is_plain_nan(Float value, Bits plain) {
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits == plain;
}

}  // namespace

std::string double_literal(double value) {
  if (std::isnan(value)) {
    return is_plain_nan(value, kNanBits64) ? "((double)NAN)" : nan_literal<std::int64_t>(value, "cannl_f64_of_bits", "LL");
  }
  if (std::isinf(value)) return value > 0 ? "((double)INFINITY)" : "((double)(-INFINITY))";
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return finish_literal(buf, std::signbit(value), "");
}

std::string float_literal(float value) {
  if (std::isnan(value)) return is_plain_nan(value, kNanBits32) ? "NAN" : nan_literal<std::int32_t>(value, "cannl_f32_of_bits", "");
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(value));
    if (std::strtof(buf, nullptr) == value) break;
  }
  return finish_literal(buf, std::signbit(value), "f");
}

std::string comment_safe(std::string_view text) {
  std::string out;
  for (std::size_t k = 0; k < text.size(); ++k) {
    out.push_back(text[k] == '\n' ? ' ' : text[k]);
    if (text[k] == '*' && k + 1 < text.size() && text[k + 1] == '/') out.push_back(' ');
  }
  return out;
}

}  // namespace cannl::codegen
