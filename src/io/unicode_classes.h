#pragma once
// The Unicode classes GPT-2's pre-tokenization pattern distinguishes, and UTF-8 decoding that
// never fails (an invalid byte is one code point of its own, of no class), so arbitrary bytes
// can be tokenized and round-trip.
//
//   unicode::is_letter(U'é') == true;  unicode::is_number(U'٣') == true
//   unicode::decode_at("\xFFa", 0) == {kInvalidCodePoint, 1}

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cannl::io::unicode {

struct CodeRange {
  char32_t first;
  char32_t last;
};

// Generated tables (unicode_tables.cpp, from scripts/gen_unicode_tables.py).
extern const CodeRange kLetterRanges[];
extern const std::size_t kLetterRangesCount;
extern const CodeRange kNumberRanges[];
extern const std::size_t kNumberRangesCount;
extern const CodeRange kSpaceRanges[];
extern const std::size_t kSpaceRangesCount;

/// Stands for a byte that does not start a valid UTF-8 sequence; it is in no class.
inline constexpr char32_t kInvalidCodePoint = 0x110000;

/// \p{L}: general category L (Lu, Ll, Lt, Lm, Lo).
bool is_letter(char32_t code_point);
/// \p{N}: general category N (Nd, Nl, No).
bool is_number(char32_t code_point);
/// \s: Unicode White_Space as the `regex` module matches it.
bool is_space(char32_t code_point);

struct Decoded {
  char32_t code_point;
  std::size_t length;  // bytes consumed, >= 1
  friend bool operator==(const Decoded&, const Decoded&) = default;
};

/// Decodes the code point starting at `text[pos]` (pos < text.size()): a malformed or truncated
/// sequence yields {kInvalidCodePoint, 1}.
Decoded decode_at(std::string_view text, std::size_t pos);

}  // namespace cannl::io::unicode
