// The strict JSON parser: what it accepts, and that every malformed input is a FormatError with
// the byte offset.
#include "io/json.h"

#include <gtest/gtest.h>

#include "cannl/support/error.h"
#include "io/io_test_util.h"

namespace cannl::io {
namespace {

using testing_util::expect_error;

TEST(Json, ParsesEveryKind) {
  json::Value v = json::parse(R"( {"a": [1, -2.5e3, "x\n\u00e9\ud83d\ude00"], "b": true, "c": null, "d": {}} )");
  ASSERT_EQ(v.kind, json::Kind::Object);
  EXPECT_EQ(v.keys, (std::vector<std::string>{"a", "b", "c", "d"}));
  const json::Value& a = *v.find("a");
  EXPECT_EQ(a.items[0].as_uint64(), 1u);
  EXPECT_EQ(a.items[1].number(), -2500.0);
  EXPECT_EQ(a.items[1].as_uint64(), std::nullopt);
  EXPECT_EQ(a.items[2].text, "x\n\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_TRUE(v.find("b")->boolean);
  EXPECT_EQ(v.find("c")->kind, json::Kind::Null);
  EXPECT_EQ(v.find("zz"), nullptr);
}

TEST(Json, ReadsLargeIntegersExactly) {
  EXPECT_EQ(json::parse("18446744073709551615").as_uint64(), 18446744073709551615ull);
  EXPECT_EQ(json::parse("18446744073709551616").as_uint64(), std::nullopt);
  EXPECT_EQ(json::parse("1.0").as_uint64(), std::nullopt);
}

TEST(Json, RejectsMalformedInput) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "unexpected end"},          {"{", "expected a string key"},
      {"[1,]", "unexpected character"}, {"{\"a\":1,}", "expected a string key"},
      {"01", "leading zero"},          {"1.", "expected a digit"},
      {"\"abc", "unterminated"},       {"\"\\q\"", "bad escape"},
      {"\"\\ud800\"", "unpaired high surrogate"}, {"\"\\udc00\"", "unpaired low surrogate"},
      {"\"a\x01\"", "control character"}, {"\"\xC0\xAF\"", "invalid UTF-8"},
      {"{\"a\":1,\"a\":2}", "duplicate key"}, {"true false", "after the JSON value"},
      {"nul", "unexpected character"}, {"// c\n{}", "unexpected character"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    expect_error<FormatError>([&] { json::parse(c.first); }, {"invalid JSON at byte", c.second});
  }
}

TEST(Json, LimitsNesting) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  expect_error<FormatError>([&] { json::parse(deep); }, {"nesting deeper than 64"});
  std::string ok(60, '[');
  ok += std::string(60, ']');
  EXPECT_EQ(json::parse(ok).kind, json::Kind::Array);
}

TEST(Json, LimitsValuesAndArrayItemsAndSaysWhere) {
  const std::string text = R"({"w": {"shape": [1, 2, 3], "x": 4}})";
  EXPECT_EQ(json::parse(text, {.max_values = 7, .max_array_items = 3}).kind, json::Kind::Object);
  try {
    json::parse(text, {.max_array_items = 2});
    FAIL() << "no error";
  } catch (const json::LimitError& e) {
    EXPECT_EQ(e.limit, json::LimitError::Limit::ArrayItems);
    EXPECT_EQ(e.path, (std::vector<std::string>{"w", "shape"}));
    EXPECT_EQ(e.offset, 23u);
    EXPECT_NE(std::string(e.what()).find("more than 2 items"), std::string::npos) << e.what();
  }
  try {
    json::parse(text, {.max_values = 6});
    FAIL() << "no error";
  } catch (const json::LimitError& e) {
    EXPECT_EQ(e.limit, json::LimitError::Limit::Values);
    EXPECT_EQ(e.path, (std::vector<std::string>{"w", "x"}));
  }
  expect_error<FormatError>([&] { json::parse("[[1]]", {.max_depth = 1}); }, {"nesting deeper than 1"});
}

TEST(Json, QuoteRoundTrips) {
  const std::string text = "a\"b\\c\n\x01\xC3\xA9";
  EXPECT_EQ(json::parse(json::quote(text)).text, text);
  EXPECT_EQ(json::quote("a\"b"), "\"a\\\"b\"");
}

TEST(Json, ValidatesUtf8) {
  EXPECT_TRUE(json::is_valid_utf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(json::is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(json::is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(json::is_valid_utf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(json::is_valid_utf8("\xE2\x82"));          // truncated
}

}  // namespace
}  // namespace cannl::io
