// The byte <-> code point table of GPT-2's encoder (its `bytes_to_unicode`), rebuilt from the
// rule stated in byte_alphabet.h.
#include "io/byte_alphabet.h"

#include <array>

namespace cannl::io {
namespace {

bool stands_for_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

const std::array<char32_t, 256>& table() {
  static const std::array<char32_t, 256> codes = [] {
    std::array<char32_t, 256> result{};
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) result[b] = stands_for_itself(b) ? b : next++;
    return result;
  }();
  return codes;
}

}  // namespace

char32_t byte_to_code_point(std::uint8_t b) { return table()[b]; }

std::optional<std::uint8_t> code_point_to_byte(char32_t code_point) {
  if (code_point < 256) {
    if (stands_for_itself(code_point)) return static_cast<std::uint8_t>(code_point);
    return std::nullopt;
  }
  for (unsigned b = 0; b < 256; ++b) {
    if (table()[b] == code_point) return static_cast<std::uint8_t>(b);
  }
  return std::nullopt;
}

std::string byte_symbol(std::uint8_t b) {
  char32_t cp = byte_to_code_point(b);
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {  // every code point of the alphabet is below U+0800: two UTF-8 bytes
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

}  // namespace cannl::io
