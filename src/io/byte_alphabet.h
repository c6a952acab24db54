#pragma once
// GPT-2's byte alphabet: each of the 256 byte values stands for one printable code point, so BPE
// tokens are strings without spaces or control characters. Printable Latin-1 bytes ('!'..'~',
// '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 take U+0100, U+0101, ... in byte order.
//
//   byte_to_code_point(' ') == U'Ġ' (U+0120);  code_point_to_byte(U'Ġ') == ' '

#include <cstdint>
#include <optional>
#include <string>

namespace cannl::io {

/// The code point byte `b` stands for.
char32_t byte_to_code_point(std::uint8_t b);
/// The byte a code point of the alphabet stands for, or nullopt when it is not in the alphabet.
std::optional<std::uint8_t> code_point_to_byte(char32_t code_point);
/// UTF-8 spelling of byte `b`'s code point ("Ġ" for ' ').
std::string byte_symbol(std::uint8_t b);

}  // namespace cannl::io
