// Strict recursive-descent JSON parser. The grammar is RFC 8259's, read by Reader; parse() builds
// a Value on it. The limits (nesting depth, values and array items, duplicate keys, UTF-8
// validity) exist because the input is an untrusted file header. The limits are checked as values
// are read, before memory is spent on them.
#include "io/json.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <utility>

#include "cannl/support/error.h"

namespace cannl::io::json {
namespace {

/// Length of the UTF-8 sequence starting at `text[i]`, or 0 when it is malformed there.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char second = byte(i + 1);
  if (lead == 0xE0 && second < 0xA0) return 0;   // overlong 3-byte form
  if (lead == 0xED && second >= 0xA0) return 0;  // UTF-16 surrogate
  if (lead == 0xF0 && second < 0x90) return 0;   // overlong 4-byte form
  if (lead == 0xF4 && second >= 0x90) return 0;  // beyond U+10FFFF
  return length;
}

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// The bytes of a string literal's body from `from` to its closing quote (or the text's end),
/// escapes counted as written.
std::size_t raw_string_length(std::string_view text, std::size_t from) {
  std::size_t at = from;
  while (at < text.size() && text[at] != '"') at += text[at] == '\\' ? 2 : 1;
  return std::min(at, text.size()) - from;
}

/// The DOM of the value the reader is at: parse()'s builder, with its duplicate-key rule.
Value read_value(Reader& reader);

Value read_object(Reader& reader) {
  Value object{.kind = Kind::Object};
  reader.begin_object();
  std::unordered_set<std::string> seen;  // linear find() would be quadratic on big vocabularies
  std::string key;
  while (reader.next_member(key)) {
    if (!seen.insert(key).second) reader.fail_at(reader.key_offset(), "duplicate key " + quote(key));
    object.keys.push_back(key);
    object.items.push_back(read_value(reader));
  }
  return object;
}

Value read_value(Reader& reader) {
  switch (reader.peek()) {
    case Kind::Object:
      return read_object(reader);
    case Kind::Array: {
      Value array{.kind = Kind::Array};
      reader.begin_array();
      while (reader.next_item()) array.items.push_back(read_value(reader));
      return array;
    }
    case Kind::String:
      return Value{.kind = Kind::String, .text = reader.read_string()};
    case Kind::Number:
      return Value{.kind = Kind::Number, .text = std::string(reader.read_number())};
    case Kind::Bool:
      return Value{.kind = Kind::Bool, .boolean = reader.read_bool()};
    case Kind::Null:
      reader.read_null();
      return Value{.kind = Kind::Null};
  }
  throw InternalError("json: a value of no kind");
}

}  // namespace

Reader::Reader(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

void Reader::fail_at(std::size_t offset, const std::string& what) const {
  throw FormatError("invalid JSON at byte " + std::to_string(offset) + ": " + what);
}

void Reader::fail_limit(LimitError::Limit limit, const std::string& what) const {
  std::vector<std::string> path;
  for (const Open& open : open_)
    if (open.object) path.push_back(open.key);
  throw LimitError("JSON past the parser's limits at byte " + std::to_string(pos_) + ": " + what, limit,
                   pos_, std::move(path));
}

void Reader::skip_whitespace() {
  while (!at_end() && (peek_char() == ' ' || peek_char() == '\t' || peek_char() == '\n' || peek_char() == '\r')) {
    ++pos_;
  }
}

void Reader::expect(char c) {
  if (peek_char() != c || at_end()) fail(std::string("expected '") + c + "'");
  ++pos_;
}

bool Reader::literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) return false;
  pos_ += word.size();
  return true;
}

void Reader::begin_value() {
  skip_whitespace();
  if (open_.size() > static_cast<std::size_t>(limits_.max_depth))
    fail_limit(LimitError::Limit::Depth, "nesting deeper than " + std::to_string(limits_.max_depth));
  if (++values_ > limits_.max_values)
    fail_limit(LimitError::Limit::Values, "more than " + std::to_string(limits_.max_values) + " values");
  if (at_end()) fail("unexpected end of input");
}

Kind Reader::peek() {
  skip_whitespace();
  if (at_end()) fail("unexpected end of input");
  const char c = peek_char();
  if (c == '{') return Kind::Object;
  if (c == '[') return Kind::Array;
  if (c == '"') return Kind::String;
  if (c == '-' || is_digit(c)) return Kind::Number;
  const std::string_view rest = text_.substr(pos_);
  if (rest.starts_with("true") || rest.starts_with("false")) return Kind::Bool;
  if (rest.starts_with("null")) return Kind::Null;
  fail(std::string("unexpected character '") + c + "'");
}

bool Reader::close_or_comma(char close) {
  Open& open = open_.back();
  skip_whitespace();
  const bool first = std::exchange(open.first, false);
  if (peek_char() == close && !at_end()) {
    ++pos_;
    open_.pop_back();
    return true;
  }
  if (!first) {
    expect(',');
    skip_whitespace();
  }
  return false;
}

void Reader::begin_object() {
  begin_value();
  expect('{');
  open_.push_back({.object = true});
}

bool Reader::next_member(std::string& key) {
  if (open_.empty() || !open_.back().object) throw InternalError("json::Reader::next_member outside an object");
  if (close_or_comma('}')) return false;
  if (peek_char() != '"') fail("expected a string key");
  key_offset_ = pos_;
  key = string_literal();
  skip_whitespace();
  expect(':');
  open_.back().key = key;  // for the path of a LimitError inside the member's value
  return true;
}

void Reader::begin_array() {
  begin_value();
  expect('[');
  open_.push_back({.object = false});
}

bool Reader::next_item() {
  if (open_.empty() || open_.back().object) throw InternalError("json::Reader::next_item outside an array");
  if (close_or_comma(']')) return false;
  if (open_.back().items == limits_.max_array_items)
    fail_limit(LimitError::Limit::ArrayItems,
               "an array of more than " + std::to_string(limits_.max_array_items) + " items");
  ++open_.back().items;
  return true;
}

std::string Reader::read_string() {
  begin_value();
  return string_literal();
}

void Reader::digits() {
  if (!is_digit(peek_char())) fail("expected a digit");
  while (is_digit(peek_char())) ++pos_;
}

std::string_view Reader::read_number() {
  begin_value();
  const std::size_t start = pos_;
  if (peek_char() == '-') ++pos_;
  if (peek_char() == '0') {
    ++pos_;
    if (is_digit(peek_char())) fail("leading zero in a number");
  } else {
    digits();
  }
  if (peek_char() == '.') ++pos_, digits();
  if (peek_char() == 'e' || peek_char() == 'E') {
    ++pos_;
    if (peek_char() == '+' || peek_char() == '-') ++pos_;
    digits();
  }
  return text_.substr(start, pos_ - start);
}

bool Reader::read_bool() {
  begin_value();
  if (literal("true")) return true;
  if (literal("false")) return false;
  fail(std::string("unexpected character '") + peek_char() + "'");
}

void Reader::read_null() {
  begin_value();
  if (!literal("null")) fail(std::string("unexpected character '") + peek_char() + "'");
}

void Reader::skip() {
  switch (peek()) {
    case Kind::Object: {
      begin_object();
      std::string key;
      while (next_member(key)) skip();
      return;
    }
    case Kind::Array:
      begin_array();
      while (next_item()) skip();
      return;
    case Kind::String:
      (void)read_string();
      return;
    case Kind::Number:
      (void)read_number();
      return;
    case Kind::Bool:
      (void)read_bool();
      return;
    case Kind::Null:
      read_null();
      return;
  }
}

void Reader::finish() {
  skip_whitespace();
  if (pos_ != text_.size()) fail("unexpected text after the JSON value");
}

std::uint32_t Reader::hex4() {
  if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
  std::uint32_t value = 0;
  for (int k = 0; k < 4; ++k) {
    char c = text_[pos_++];
    int digit = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (digit < 0) fail("bad hex digit in a \\u escape");
    value = value * 16 + static_cast<std::uint32_t>(digit);
  }
  return value;
}

std::uint32_t Reader::unicode_escape() {
  std::uint32_t unit = hex4();
  if (unit >= 0xDC00 && unit <= 0xDFFF) fail("unpaired low surrogate");
  if (unit < 0xD800 || unit > 0xDBFF) return unit;
  if (!literal("\\u")) fail("unpaired high surrogate");
  std::uint32_t low = hex4();
  if (low < 0xDC00 || low > 0xDFFF) fail("unpaired high surrogate");
  return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
}

void Reader::escape(std::string& out) {
  if (at_end()) fail("unterminated string");
  char c = text_[pos_++];
  switch (c) {
    case '"': out += '"'; break;
    case '\\': out += '\\'; break;
    case '/': out += '/'; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'u': append_utf8(out, unicode_escape()); break;
    default: --pos_, fail(std::string("bad escape '\\") + c + "'");
  }
}

std::string Reader::string_literal() {
  expect('"');
  std::string out;
  // Decoded, a string is at most as long as its literal: reserved once, a long string (a large
  // metadata value) costs its length, not the up to twice that of growing by doubling.
  out.reserve(raw_string_length(text_, pos_));
  while (true) {
    if (at_end()) fail("unterminated string");
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c < 0x20) fail("control character in a string");
    if (c == '\\') {
      ++pos_;
      escape(out);
      continue;
    }
    std::size_t length = utf8_sequence_length(text_, pos_);
    if (length == 0) fail("invalid UTF-8 in a string");
    out.append(text_.substr(pos_, length));
    pos_ += length;
  }
}

const Value* Value::find(std::string_view key) const {
  if (kind != Kind::Object) return nullptr;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return &items[i];
  }
  return nullptr;
}

double Value::number() const {
  if (kind != Kind::Number) throw FormatError("expected a JSON number");
  return std::strtod(text.c_str(), nullptr);
}

std::optional<std::uint64_t> Value::as_uint64() const {
  if (kind != Kind::Number) return std::nullopt;
  return uint64_literal(text);
}

std::optional<std::uint64_t> uint64_literal(std::string_view literal) {
  if (literal.empty() || literal.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : literal) {
    if (!is_digit(c)) return std::nullopt;
    auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

Value parse(std::string_view text, const Limits& limits) {
  Reader reader(text, limits);
  Value value = read_value(reader);
  reader.finish();
  return value;
}

std::string quote(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

}  // namespace cannl::io::json
