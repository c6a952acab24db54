// GPT-2 byte-level BPE: ids equal those of the independent Python reference
// (scripts/bpe_reference.py -> tests/io/data/bpe_reference.json) on a committed test text and
// random strings over many scripts; decode(encode(s)) == s for arbitrary bytes. Those ids are the
// real GPT-2 tokenizer's: scripts/check_bpe_reference.py finds all 201 texts (12185 ids) equal to
// Hugging Face's GPT2Tokenizer on the same vocabulary files (transformers 5.24).
#include "cannl/io/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "io/byte_alphabet.h"
#include "io/io_test_util.h"
#include "io/json.h"
#include "io/pretokenize.h"

namespace cannl::io {
namespace {

using testing_util::expect_error;

const std::filesystem::path kSource = CANNL_SOURCE_DIR;

const BpeTokenizer& gpt2() {
  static const BpeTokenizer tokenizer = BpeTokenizer::from_directory(kSource / "data/gpt2-bpe");
  return tokenizer;
}

TEST(BpeTokenizer, LoadsGpt2Vocabulary) {
  EXPECT_EQ(gpt2().vocab_size(), 50257u);
  EXPECT_EQ(gpt2().token_id("Ġthe"), 262);
  EXPECT_EQ(gpt2().token_id("<|endoftext|>"), 50256);
  EXPECT_EQ(gpt2().token_id("no such token"), std::nullopt);
}

TEST(BpeTokenizer, KnownEncodings) {
  EXPECT_EQ(gpt2().encode("Hello world"), (std::vector<TokenId>{15496, 995}));
  EXPECT_EQ(gpt2().encode(" the"), std::vector<TokenId>{262});
  EXPECT_EQ(gpt2().encode(""), std::vector<TokenId>{});
  EXPECT_EQ(gpt2().decode(std::vector<TokenId>{50256}), "<|endoftext|>");
}

TEST(BpeTokenizer, MatchesTheReferenceImplementation) {
  json::Value cases = json::parse(files::read_file(kSource / "tests/io/data/bpe_reference.json"));
  ASSERT_GE(cases.items.size(), 100u);
  std::size_t tokens = 0;
  for (const json::Value& c : cases.items) {
    const std::string& text = c.find("text")->text;
    std::vector<TokenId> expected;
    for (const json::Value& id : c.find("ids")->items) expected.push_back(static_cast<TokenId>(*id.as_uint64()));
    std::vector<TokenId> ids = gpt2().encode(text);
    EXPECT_EQ(ids, expected) << json::quote(text);
    EXPECT_EQ(gpt2().decode(ids), text);
    tokens += ids.size();
  }
  EXPECT_GT(tokens, 2000u);
}

TEST(BpeTokenizer, RoundTripsArbitraryBytes) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes(std::uniform_int_distribution<int>(0, 80)(rng), '\0');
    for (char& b : bytes) b = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    EXPECT_EQ(gpt2().decode(gpt2().encode(bytes)), bytes) << json::quote(json::is_valid_utf8(bytes) ? bytes : "");
  }
}

TEST(BpeTokenizer, RoundTripsRandomUtf8) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> code_point(1, 0x10FFFF);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (int k = 0; k < 30; ++k) {
      std::uint32_t cp = code_point(rng) >> std::uniform_int_distribution<int>(0, 12)(rng);
      if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) cp = ' ';
      if (cp < 0x80) text += static_cast<char>(cp);
      else if (cp < 0x800) text += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      else if (cp < 0x10000) text += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
      else text += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    ASSERT_TRUE(json::is_valid_utf8(text));
    EXPECT_EQ(gpt2().decode(gpt2().encode(text)), text);
  }
}

TEST(BpeTokenizer, HugeWordsEncode) {
  // One 300,000-letter piece: quadratic merging would take minutes (the test's timeout).
  std::string word;
  std::mt19937 rng(3);
  for (int k = 0; k < 300000; ++k) word += static_cast<char>('a' + std::uniform_int_distribution<int>(0, 25)(rng));
  std::vector<TokenId> ids = gpt2().encode(word);
  EXPECT_LT(ids.size(), word.size() * 2 / 3);
  EXPECT_EQ(gpt2().decode(ids), word);
  // The reference gives 250 x "aaaa" (24794) for 1000 a's and "aaaa aaaa a" for nine.
  EXPECT_EQ(gpt2().encode(std::string(1000, 'a')), std::vector<TokenId>(250, 24794));
  EXPECT_EQ(gpt2().encode(std::string(9, 'a')), (std::vector<TokenId>{24794, 24794, 64}));
}

TEST(BpeTokenizer, PretokenizesLikeGpt2) {
  using Pieces = std::vector<std::string_view>;
  EXPECT_EQ(pretokenize("Hello world's  end"), (Pieces{"Hello", " world", "'s", " ", " end"}));
  EXPECT_EQ(pretokenize("a  \n\nb  "), (Pieces{"a", "  \n", "\n", "b", "  "}));  // as the regex module splits it
  EXPECT_EQ(pretokenize("x123 4.5!!? 'tis"), (Pieces{"x", "123", " 4", ".", "5", "!!?", " '", "tis"}));
  EXPECT_EQ(pretokenize("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"), (Pieces{"caf\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(pretokenize("\xFF\xFE a"), (Pieces{"\xFF\xFE", " a"}));  // invalid bytes: class "other"
  EXPECT_EQ(pretokenize("I'M"), (Pieces{"I", "'", "M"}));             // contractions are lower case
}

TEST(BpeTokenizer, ByteAlphabetIsGpt2s) {
  EXPECT_EQ(byte_symbol(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(byte_symbol('A'), "A");
  EXPECT_EQ(byte_to_code_point(0), U'\u0100');
  EXPECT_EQ(byte_to_code_point(0xAD), U'\u0143');  // the soft hyphen is the last remapped Latin-1 byte
  std::set<char32_t> seen;
  for (unsigned b = 0; b < 256; ++b) {
    char32_t cp = byte_to_code_point(static_cast<std::uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second);
    EXPECT_EQ(code_point_to_byte(cp), b);
  }
  EXPECT_EQ(code_point_to_byte(U'\u0200'), std::nullopt);
}

TEST(BpeTokenizer, DecodeRejectsUnknownIds) {
  expect_error<RuntimeUsageError>([] { gpt2().decode(std::vector<TokenId>{50257}); },
                                  {"token id 50257 is not in the vocabulary", "50257 ids"});
  expect_error<RuntimeUsageError>([] { gpt2().decode(std::vector<TokenId>{-1}); }, {"token id -1"});
}

/// encoder.json of the 256 byte tokens (ids 0-255) and then `extra` (ids 256, 257, ...).
std::string tiny_encoder(std::initializer_list<std::string> extra) {
  std::string encoder = "{";
  for (unsigned b = 0; b < 256; ++b)
    encoder += (b ? "," : "") + json::quote(byte_symbol(static_cast<std::uint8_t>(b))) + ":" + std::to_string(b);
  int id = 256;
  for (const std::string& token : extra) encoder += "," + json::quote(token) + ":" + std::to_string(id++);
  return encoder + "}";
}

TEST(BpeTokenizer, DuplicateMergeLinesTakeTheLastRank) {
  // As GPT-2's encoder, Hugging Face and scripts/bpe_reference.py read vocab.bpe (a dict of
  // pair -> line number, later lines overwriting): "a b" ranks 2, after "b c" at 1.
  const auto dir = testing_util::scratch_dir();
  testing_util::spit(dir / "encoder.json", tiny_encoder({"ab", "bc"}));
  testing_util::spit(dir / "vocab.bpe", "#version: 0.2\na b\nb c\na b\n");
  const auto tokenizer = BpeTokenizer::from_directory(dir);
  EXPECT_EQ(tokenizer.encode("abc"), (std::vector<TokenId>{'a', 257}));  // [a, bc]
}

TEST(BpeTokenizer, MalformedFilesAreFormatErrors) {
  const auto dir = testing_util::scratch_dir();
  testing_util::spit(dir / "encoder.json", tiny_encoder({"ab"}));
  testing_util::spit(dir / "vocab.bpe", "#version: 0.2\na b\n");
  auto tiny = BpeTokenizer::from_directory(dir);
  EXPECT_EQ(tiny.encode("abab"), (std::vector<TokenId>{256, 256}));

  testing_util::spit(dir / "vocab.bpe", "#version: 0.2\na b\nab c\n");
  expect_error<FormatError>([&] { BpeTokenizer::from_directory(dir); }, {"vocab.bpe line 3", "token \"abc\" is not in encoder.json"});
  testing_util::spit(dir / "vocab.bpe", "#version: 0.2\nab\n");
  expect_error<FormatError>([&] { BpeTokenizer::from_directory(dir); }, {"vocab.bpe line 2", "two tokens"});
  testing_util::spit(dir / "encoder.json", "{\"a\": 0}");
  expect_error<FormatError>([&] { BpeTokenizer::from_directory(dir); }, {"encoder.json", "byte 0", "has no token"});
  testing_util::spit(dir / "encoder.json", "{\"a\": 0, \"b\": 0}");
  expect_error<FormatError>([&] { BpeTokenizer::from_directory(dir); }, {"encoder.json", "id 0 is used twice"});
  testing_util::spit(dir / "encoder.json", "{\"a\" 0}");
  expect_error<FormatError>([&] { BpeTokenizer::from_directory(dir); }, {"encoder.json", "invalid JSON"});
  expect_error<IoError>([&] { BpeTokenizer::from_directory(dir / "missing"); }, {"missing"});
}

}  // namespace
}  // namespace cannl::io
