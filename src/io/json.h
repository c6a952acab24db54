#pragma once
// A small strict JSON parser (RFC 8259) for the headers of safetensors files and the tokenizer's
// encoder.json. Strict means: no comments, no trailing commas, no leading zeros, no control
// characters or invalid UTF-8 in strings, unpaired surrogates rejected, duplicate object keys
// rejected (a header that names a tensor twice is lying), nesting limited so hostile input cannot
// exhaust the stack, and optionally the number of values and of array items (Limits) so it cannot
// exhaust memory either. Every failure is a FormatError giving the byte offset; callers prefix
// the file name. parse() builds a whole document (Value); a Reader walks one with the same
// grammar and keeps nothing, for a caller that keeps only what it needs of a large untrusted
// document (a safetensors header: its memory then follows what it keeps, not the values read).
//
//   json::Value v = json::parse(R"({"a": [1, 2.5, "x"]})");
//   v.find("a")->items[1].number() == 2.5

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/support/error.h"

namespace cannl::io::json {

enum class Kind : unsigned char { Null, Bool, Number, String, Array, Object };

/// One JSON value. Numbers keep their literal text so 64-bit integers are read exactly.
///   parse("12345678901234567890").as_uint64() == 12345678901234567890u
struct Value {
  Kind kind = Kind::Null;
  bool boolean = false;
  /// A string's decoded UTF-8 contents, or a number's literal text.
  std::string text;
  /// Array elements, or object member values (parallel to `keys`).
  std::vector<Value> items;
  /// Object member names in document order.
  std::vector<std::string> keys;

  /// The member named `key` of an object; nullptr when absent or not an object.
  const Value* find(std::string_view key) const;
  /// A number as double (may round); throws FormatError when not a number.
  double number() const;
  /// A non-negative integer literal without fraction or exponent that fits 64 bits, else nullopt.
  std::optional<std::uint64_t> as_uint64() const;
};

/// What one parse may build. A bound on the text's length does not bound the memory: a Value
/// takes about 90 bytes however short its text (the "0," of an array of zeros is two bytes), so
/// untrusted input also needs bounds on what it holds.
///   Limits{.max_values = 1'000'000, .max_array_items = 64}
struct Limits {
  int max_depth = 64;                                                 // nested arrays / objects
  std::size_t max_values = std::numeric_limits<std::size_t>::max();   // in the whole document
  std::size_t max_array_items = std::numeric_limits<std::size_t>::max();  // in any one array
};

/// The FormatError of a parse that went past one of its Limits at byte `offset`. `path` holds the
/// keys of the objects enclosing that place, outermost first, so that a caller can name the
/// culprit in its own terms (in a safetensors header: the tensor and its member).
///   parse(R"({"w": {"shape": [1, 2, 3]}})", {.max_array_items = 2}) throws a LimitError with
///   limit == ArrayItems, path == {"w", "shape"}, offset == 23
class LimitError : public FormatError {
 public:
  enum class Limit : unsigned char { Depth, Values, ArrayItems };
  LimitError(const std::string& message, Limit limit, std::size_t offset,
             std::vector<std::string> path)
      : FormatError(message), limit(limit), offset(offset), path(std::move(path)) {}
  Limit limit;
  std::size_t offset;
  std::vector<std::string> path;
};

/// A pull reader of one JSON document: the caller asks for what it expects next, and the reader
/// checks the grammar as it goes (whitespace, commas and colons are its business), counts values
/// and depth against `limits` (a LimitError whose path holds the keys of the open objects), and
/// builds nothing but the strings it is asked to read. Each value is read by exactly one of
/// begin_object, begin_array, read_string, read_number, read_bool, read_null or skip.
///
///   Reader r(R"({"shape": [2, 3], "x": null})");
///   r.begin_object();  std::string key;
///   while (r.next_member(key)) {
///     if (key == "shape") { r.begin_array(); while (r.next_item()) dims.push_back(r.read_number()); }
///     else r.skip();
///   }
///   r.finish();
class Reader {
 public:
  explicit Reader(std::string_view text, const Limits& limits = {});

  /// The kind of the next value (whitespace before it skipped). FormatError at the end of the
  /// text or at a character that begins no value.
  Kind peek();
  /// Opens the object that comes next; its members follow by next_member.
  void begin_object();
  /// Moves to the next member of the innermost open object: true with its key in `key` (its ':'
  /// read; the value comes next), false at the object's '}' (read: the object is closed).
  bool next_member(std::string& key);
  /// The byte offset of the key next_member read last (for a message about the key).
  std::size_t key_offset() const { return key_offset_; }
  /// Opens the array that comes next; its items follow by next_item.
  void begin_array();
  /// True when the innermost open array has another item (read it next), false at its ']'.
  bool next_item();
  std::string read_string();
  /// A number's literal text (a view into the document), so 64-bit integers are read exactly.
  std::string_view read_number();
  bool read_bool();
  void read_null();
  /// Reads the next value, of any kind, checking it and keeping nothing.
  void skip();
  /// Checks that only whitespace follows the document's value.
  void finish();

  std::size_t offset() const { return pos_; }
  /// Values read so far (every one counts, nested ones too), as Limits::max_values counts them.
  std::size_t values() const { return values_; }
  /// FormatError("invalid JSON at byte <offset>: <what>").
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const;

 private:
  struct Open {
    bool object;
    bool first = true;         // no member or item read yet
    std::size_t items = 0;     // of an array
    std::string key;           // of an object: the member being read
  };
  [[noreturn]] void fail_limit(LimitError::Limit limit, const std::string& what) const;
  bool at_end() const { return pos_ >= text_.size(); }
  char peek_char() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_whitespace();
  void expect(char c);
  bool literal(std::string_view word);
  /// The checks and counts of a value about to be read; leaves the position at its first byte.
  void begin_value();
  /// Leaves the innermost container when its closing `close` comes next (after any comma).
  bool close_or_comma(char close);
  void digits();
  std::uint32_t hex4();
  std::uint32_t unicode_escape();
  void escape(std::string& out);
  std::string string_literal();

  std::string_view text_;
  Limits limits_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
  std::size_t key_offset_ = 0;
  std::vector<Open> open_;
};

/// Parses one JSON document; surrounding whitespace is allowed, anything else after it is not.
/// Throws FormatError("invalid JSON at byte N: ..."), a LimitError when the text goes past
/// `limits`.
///   parse("{\"k\": true}").find("k")->boolean == true
Value parse(std::string_view text, const Limits& limits = {});

/// A number literal's value when it is a non-negative integer without fraction or exponent that
/// fits 64 bits, else nullopt (Value::as_uint64 of a number; a Reader's read_number).
///   uint64_literal("18446744073709551615") == 18446744073709551615u;  uint64_literal("1.0") == nullopt
std::optional<std::uint64_t> uint64_literal(std::string_view literal);

/// A JSON string literal for `text` (quotes included; control characters escaped). `text` must
/// be valid UTF-8, which is passed through unescaped.
///   quote("a\"b") == "\"a\\\"b\""
std::string quote(std::string_view text);

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
///   is_valid_utf8("\xC3\xA9") == true;  is_valid_utf8("\xC0\xAF") == false
bool is_valid_utf8(std::string_view text);

}  // namespace cannl::io::json
