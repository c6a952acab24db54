#pragma once
// GPT-2's byte-level BPE tokenizer, read from the original `encoder.json` (token -> id) and
// `vocab.bpe` (merges, best first; a pair listed twice ranks by its last line, as in GPT-2's
// encoder and Hugging Face's). Text is split by GPT-2's pre-tokenization pattern, each
// piece's bytes are mapped to GPT-2's printable byte alphabet and merged pair by pair in rank
// order. Every byte string encodes (invalid UTF-8 included) and decode(encode(s)) == s.
// Special tokens are not recognized in text: "<|endoftext|>" in the input encodes as ordinary
// text (like tiktoken's encode_ordinary); decode of its id gives the literal string.
//
//   auto tok = io::BpeTokenizer::from_directory("data/gpt2-bpe");
//   tok.encode("Hello world") == {15496, 995};
//   tok.decode(tok.encode(text)) == text

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cannl::io {

using TokenId = std::int32_t;

class BpeTokenizer {
 public:
  /// Loads the vocabulary and merges. Throws IoError when a file cannot be read and FormatError
  /// (naming the file and the line or token) when one is malformed or the two disagree.
  ///   BpeTokenizer::from_files("gpt2/encoder.json", "gpt2/vocab.bpe")
  static BpeTokenizer from_files(const std::filesystem::path& encoder_json,
                                 const std::filesystem::path& vocab_bpe);
  /// from_files(dir / "encoder.json", dir / "vocab.bpe").
  static BpeTokenizer from_directory(const std::filesystem::path& dir);

  /// Token ids of `text` (any bytes).   encode(" the") == {262}
  std::vector<TokenId> encode(std::string_view text) const;
  /// The bytes the ids stand for. Throws RuntimeUsageError naming an id the vocabulary lacks.
  ///   decode({15496, 995}) == "Hello world"
  std::string decode(std::span<const TokenId> ids) const;
  /// One more than the largest id (50257 for GPT-2).
  std::size_t vocab_size() const;
  /// The id of a token spelled in GPT-2's byte alphabet ("Ġthe" for " the"), or nullopt.
  std::optional<TokenId> token_id(std::string_view token) const;

 private:
  struct Impl;
  explicit BpeTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cannl::io
