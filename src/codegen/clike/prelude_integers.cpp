// Prelude helpers: integer division and modulo without undefined behaviour, and saturating
// float -> integer conversions (loop_ir.h: truncate toward zero, saturate, NaN -> 0).
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

struct IntType {
  const char* tag;     // i32 ...
  const char* type;    // int32_t ...
  const char* utype;   // the unsigned type of the same width
  const char* min;     // C expression of the minimum, or nullptr for unsigned types
  const char* max;     // C expression of the maximum
  const char* lo;      // double at or below which the minimum saturates
  const char* hi;      // double at or above which the maximum saturates
};

constexpr IntType kIntTypes[] = {
    {"i32", "int32_t", "uint32_t", "INT32_MIN", "INT32_MAX", "-2147483648.0", "2147483647.0"},
    {"i64", "int64_t", "uint64_t", "INT64_MIN", "INT64_MAX", "-9223372036854775808.0",
     "9223372036854775808.0"},
    {"u32", "uint32_t", "uint32_t", nullptr, "UINT32_MAX", "0.0", "4294967295.0"},
    {"u64", "uint64_t", "uint64_t", nullptr, "UINT64_MAX", "0.0", "18446744073709551616.0"},
    {"u8", "uint8_t", "uint8_t", nullptr, "UINT8_MAX", "0.0", "255.0"},
};

std::string div_text(const IntType& t) {
  const std::string ty = t.type;
  std::string s = "$P " + ty + " cannl_div_" + t.tag + "(" + ty + " a, " + ty + " b) {\n";
  s += "  if (b == 0) return 0; /* division by zero gives 0 */\n";
  if (t.min != nullptr) {
    s += "  if (b == -1) return (" + ty + ")((" + t.utype + ")0 - (" + t.utype +
         ")a); /* MIN / -1 wraps */\n";
  }
  return s + "  return (" + ty + ")(a / b);\n}\n";
}

std::string mod_text(const IntType& t) {
  const std::string ty = t.type;
  std::string s = "$P " + ty + " cannl_mod_" + t.tag + "(" + ty + " a, " + ty + " b) {\n";
  s += t.min != nullptr ? "  if (b == 0 || b == -1) return 0;\n" : "  if (b == 0) return 0;\n";
  return s + "  return (" + ty + ")(a % b);\n}\n";
}

std::string from_f64_text(const IntType& t) {
  const std::string ty = t.type;
  std::string s = "$P " + ty + " cannl_f64_to_" + t.tag + "(double x) {\n";
  s += "  if (x != x) return 0; /* NaN */\n";
  s += "  if (x <= " + std::string(t.lo) + ") return " + (t.min ? t.min : "0") + ";\n";
  s += "  if (x >= " + std::string(t.hi) + ") return " + t.max + ";\n";
  return s + "  return (" + ty + ")x; /* truncates toward zero */\n}\n";
}

// ir::dynamic_row: the row a dynamic access selects, -1 for none (negative, too large,
// fractional or NaN; NaN fails both comparisons). The cast is defined once x is in [0, n).
std::string dynamic_row_text() {
  std::string s = "$P int64_t cannl_dyn_row(double x, int64_t n) {\n";
  s += "  if (!(x >= 0) || !(x < (double)n)) return -1;\n";
  return s + "  return (double)(int64_t)x == x ? (int64_t)x : -1;\n}\n";
}

}  // namespace

void append_integer_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_dyn_row", dynamic_row_text(), {}});
  for (const auto& t : kIntTypes) {
    out.push_back({std::string("cannl_div_") + t.tag, div_text(t), {}});
    out.push_back({std::string("cannl_mod_") + t.tag, mod_text(t), {}});
    out.push_back({std::string("cannl_f64_to_") + t.tag, from_f64_text(t), {}});
  }
}

}  // namespace cannl::codegen
