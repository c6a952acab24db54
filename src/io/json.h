#pragma once
// A small strict JSON parser (RFC 8259) for the headers of safetensors files and the tokenizer's
// encoder.json. Strict means: no comments, no trailing commas, no leading zeros, no control
// characters or invalid UTF-8 in strings, unpaired surrogates rejected, duplicate object keys
// rejected (a header that names a tensor twice is lying), nesting limited so hostile input cannot
// exhaust the stack, and optionally the number of values and of array items (Limits) so it cannot
// exhaust memory either. Every failure is a FormatError giving the byte offset; callers prefix
// the file name.
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

/// Parses one JSON document; surrounding whitespace is allowed, anything else after it is not.
/// Throws FormatError("invalid JSON at byte N: ..."), a LimitError when the text goes past
/// `limits`.
///   parse("{\"k\": true}").find("k")->boolean == true
Value parse(std::string_view text, const Limits& limits = {});

/// A JSON string literal for `text` (quotes included; control characters escaped). `text` must
/// be valid UTF-8, which is passed through unescaped.
///   quote("a\"b") == "\"a\\\"b\""
std::string quote(std::string_view text);

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
///   is_valid_utf8("\xC3\xA9") == true;  is_valid_utf8("\xC0\xAF") == false
bool is_valid_utf8(std::string_view text);

}  // namespace cannl::io::json
