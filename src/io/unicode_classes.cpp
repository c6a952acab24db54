// Class membership by binary search over the generated range tables, with an ASCII fast path
// (most text is ASCII and the pre-tokenizer asks about every code point).
#include "io/unicode_classes.h"

#include <algorithm>

#include "io/json.h"

namespace cannl::io::unicode {
namespace {

bool in_ranges(const CodeRange* ranges, std::size_t count, char32_t code_point) {
  const CodeRange* end = ranges + count;
  const CodeRange* it = std::upper_bound(ranges, end, code_point,
                                         [](char32_t cp, const CodeRange& r) { return cp < r.first; });
  return it != ranges && code_point <= (it - 1)->last;
}

}  // namespace

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return in_ranges(kLetterRanges, kLetterRangesCount, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(kNumberRanges, kNumberRangesCount, cp);
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r');
  return in_ranges(kSpaceRanges, kSpaceRangesCount, cp);
}

Decoded decode_at(std::string_view text, std::size_t pos) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[pos + k]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  // Validity (overlong forms, surrogates, range) is the JSON layer's strict UTF-8 check.
  if (!json::is_valid_utf8(text.substr(pos, length)) || pos + length > text.size())
    return {kInvalidCodePoint, 1};
  char32_t cp = lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) cp = (cp << 6) | (byte(k) & 0x3F);
  return {cp, length};
}

}  // namespace cannl::io::unicode
