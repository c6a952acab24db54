// Strict recursive-descent JSON parser. The grammar is RFC 8259's; the limits (nesting depth,
// values and array items, duplicate keys, UTF-8 validity) exist because the input is an untrusted
// file header. The limits are checked as values are made, before memory is spent on them.
#include "io/json.h"

#include <cstdlib>
#include <string>
#include <unordered_set>

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

class Parser {
 public:
  Parser(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

  Value document() {
    skip_whitespace();
    Value value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  [[noreturn]] void fail_limit(LimitError::Limit limit, const std::string& what) const {
    std::vector<std::string> path;
    for (const std::string* key : keys_) path.push_back(*key);
    throw LimitError("JSON past the parser's limits at byte " + std::to_string(pos_) + ": " + what,
                     limit, pos_, std::move(path));
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }

  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  Value parse_value(int depth) {
    if (depth > limits_.max_depth)
      fail_limit(LimitError::Limit::Depth,
                 "nesting deeper than " + std::to_string(limits_.max_depth));
    if (++values_ > limits_.max_values)
      fail_limit(LimitError::Limit::Values,
                 "more than " + std::to_string(limits_.max_values) + " values");
    if (at_end()) fail("unexpected end of input");
    char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Value{.kind = Kind::String, .text = parse_string()};
    if (c == '-' || is_digit(c)) return parse_number();
    if (literal("true")) return Value{.kind = Kind::Bool, .boolean = true};
    if (literal("false")) return Value{.kind = Kind::Bool, .boolean = false};
    if (literal("null")) return Value{.kind = Kind::Null};
    fail(std::string("unexpected character '") + c + "'");
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value parse_object(int depth) {
    Value object{.kind = Kind::Object};
    expect('{');
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return object;
    }
    std::unordered_set<std::string> seen;  // linear find() would be quadratic on big vocabularies
    while (true) {
      skip_whitespace();
      if (peek() != '"') fail("expected a string key");
      std::size_t key_pos = pos_;
      std::string key = parse_string();
      if (!seen.insert(key).second) {
        pos_ = key_pos;
        fail("duplicate key " + quote(key));
      }
      skip_whitespace();
      expect(':');
      skip_whitespace();
      object.keys.push_back(std::move(key));
      // The key stays put while its value is parsed: nothing else is added to this object then.
      keys_.push_back(&object.keys.back());
      object.items.push_back(parse_value(depth + 1));
      keys_.pop_back();
      skip_whitespace();
      if (peek() == '}' && !at_end()) {
        ++pos_;
        return object;
      }
      expect(',');
    }
  }

  Value parse_array(int depth) {
    Value array{.kind = Kind::Array};
    expect('[');
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return array;
    }
    while (true) {
      skip_whitespace();
      if (array.items.size() == limits_.max_array_items)
        fail_limit(LimitError::Limit::ArrayItems,
                   "an array of more than " + std::to_string(limits_.max_array_items) + " items");
      array.items.push_back(parse_value(depth + 1));
      skip_whitespace();
      if (peek() == ']' && !at_end()) {
        ++pos_;
        return array;
      }
      expect(',');
    }
  }

  void digits() {
    if (!is_digit(peek())) fail("expected a digit");
    while (is_digit(peek())) ++pos_;
  }

  Value parse_number() {
    std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) fail("leading zero in a number");
    } else {
      digits();
    }
    if (peek() == '.') ++pos_, digits();
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    return Value{.kind = Kind::Number, .text = std::string(text_.substr(start, pos_ - start))};
  }

  std::uint32_t hex4() {
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

  std::uint32_t unicode_escape() {
    std::uint32_t unit = hex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF) fail("unpaired low surrogate");
    if (unit < 0xD800 || unit > 0xDBFF) return unit;
    if (!literal("\\u")) fail("unpaired high surrogate");
    std::uint32_t low = hex4();
    if (low < 0xDC00 || low > 0xDFFF) fail("unpaired high surrogate");
    return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
  }

  void escape(std::string& out) {
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

  std::string parse_string() {
    expect('"');
    std::string out;
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

  std::string_view text_;
  const Limits& limits_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
  std::vector<const std::string*> keys_;  // of the objects enclosing the value being parsed
};

}  // namespace

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
  if (kind != Kind::Number || text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

Value parse(std::string_view text, const Limits& limits) { return Parser(text, limits).document(); }

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
