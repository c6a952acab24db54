// Hand-written matcher for GPT-2's pre-tokenization pattern (see pretokenize.h). Each function
// returns the length in bytes of its alternative's match at `pos`, 0 when it does not match.
#include "io/pretokenize.h"

#include <array>

#include "io/unicode_classes.h"

namespace cannl::io {
namespace {

using unicode::decode_at;

enum class Class { Letter, Number, Space, Other };

Class class_of(char32_t cp) {
  if (unicode::is_letter(cp)) return Class::Letter;
  if (unicode::is_number(cp)) return Class::Number;
  if (unicode::is_space(cp)) return Class::Space;
  return Class::Other;  // includes kInvalidCodePoint
}

/// The class of the character at `pos` and its length; Other with length 0 at the end.
unicode::Decoded char_at(std::string_view text, std::size_t pos) {
  return pos < text.size() ? decode_at(text, pos) : unicode::Decoded{0, 0};
}

/// 's 't 're 've 'm 'll 'd (ASCII apostrophe, lower case, as the pattern spells them).
std::size_t match_contraction(std::string_view text, std::size_t pos) {
  static constexpr std::array<std::string_view, 7> kSuffixes = {"s", "t", "re", "ve", "m", "ll", "d"};
  if (text[pos] != '\'') return 0;
  for (std::string_view suffix : kSuffixes) {
    if (text.substr(pos + 1, suffix.size()) == suffix) return 1 + suffix.size();
  }
  return 0;
}

/// Length of the run of characters of class `wanted` starting at `pos`.
std::size_t run_of(std::string_view text, std::size_t pos, Class wanted) {
  std::size_t end = pos;
  while (end < text.size()) {
    unicode::Decoded d = decode_at(text, end);
    if (class_of(d.code_point) != wanted) break;
    end += d.length;
  }
  return end - pos;
}

/// ` ?X+` for X = letters, numbers, or neither-space-letter-nor-number (Other).
std::size_t match_optional_space_run(std::string_view text, std::size_t pos, Class wanted) {
  std::size_t start = text[pos] == ' ' ? pos + 1 : pos;
  std::size_t run = run_of(text, start, wanted);
  if (run > 0) return start - pos + run;
  // With the space taken the run is empty; without it the space itself would have to be X,
  // which it is not (it is whitespace), so the alternative fails.
  return 0;
}

/// `\s+(?!\S)` then `\s+`: the whitespace run, minus its last character when a non-space
/// follows and the run has more than one character.
std::size_t match_space(std::string_view text, std::size_t pos) {
  std::size_t end = pos;
  std::size_t last_length = 0;
  while (end < text.size()) {
    unicode::Decoded d = decode_at(text, end);
    if (class_of(d.code_point) != Class::Space) break;
    last_length = d.length;
    end += d.length;
  }
  if (end == pos) return 0;
  if (end == text.size() || end - last_length == pos) return end - pos;
  return end - last_length - pos;
}

std::size_t match_at(std::string_view text, std::size_t pos) {
  if (std::size_t n = match_contraction(text, pos)) return n;
  for (Class wanted : {Class::Letter, Class::Number, Class::Other}) {
    if (std::size_t n = match_optional_space_run(text, pos, wanted)) return n;
  }
  if (std::size_t n = match_space(text, pos)) return n;
  return char_at(text, pos).length;  // unreachable for any character; keeps progress certain
}

}  // namespace

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t length = match_at(text, pos);
    pieces.push_back(text.substr(pos, length));
    pos += length;
  }
  return pieces;
}

}  // namespace cannl::io
