#pragma once
// Small helpers for building C expression text safely: every operand substituted into an op
// spelling or a cast is first made *atomic* (a name, a literal, a call, a subscript or a fully
// parenthesized group), so precedence never depends on what the operand happens to be.
//
//   atom("a + b") == "(a + b)";  atom("w[i0]") == "w[i0]";  c_cast("float", "x + 1") == "((float)(x + 1))"

#include <string>
#include <string_view>
#include <vector>

namespace cannl::codegen {

/// True when `text` needs no parentheses as an operand of any C operator.
bool is_atomic(std::string_view text);
/// `text`, parenthesized unless atomic.
std::string atom(const std::string& text);
/// "((type)atom(text))".
std::string c_cast(std::string_view type, const std::string& text);
/// Replaces $0 $1 $2 by the (atomic) args, $f by `libm_suffix` and $T by `int_tag`.
std::string substitute_spelling(std::string_view spelling, const std::vector<std::string>& args,
                                std::string_view libm_suffix, std::string_view int_tag);
/// Shortest decimal text that reads back as exactly `value` (at most 17 digits), always with a
/// '.' or exponent; negative values parenthesized; INFINITY and the positive quiet NaN spelled as
/// macros, any other NaN by its bits (cannl_f64_of_bits(-2251799813685248LL): -NaN).
std::string double_literal(double value);
/// As double_literal for a float, with the `f` suffix ("0.1f").
std::string float_literal(float value);
/// Text safe inside a /* */ comment (no "*/").
std::string comment_safe(std::string_view text);

}  // namespace cannl::codegen
