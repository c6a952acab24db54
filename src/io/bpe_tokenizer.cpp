// GPT-2 byte-level BPE. Symbols are token ids from the start (every byte and every merge result
// is a vocabulary token, checked at load), so a merge is a lookup of an id pair, never string
// concatenation. The merge order is GPT-2's: take the adjacent pair of lowest rank, merge all its
// occurrences left to right, repeat until no pair has a rank; a heap of candidate pairs over a
// linked list of symbols makes that O(n log n) per piece instead of GPT-2's O(n^2), so one huge
// "word" cannot stall encoding.
#include "cannl/io/bpe_tokenizer.h"

#include <array>
#include <limits>
#include <queue>
#include <unordered_map>

#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "io/byte_alphabet.h"
#include "io/json.h"
#include "io/pretokenize.h"
#include "io/unicode_classes.h"

namespace cannl::io {

namespace {

/// The loaded files: the vocabulary both ways and the merges.
struct Vocabulary {
  struct Merge {
    std::size_t rank;
    TokenId merged;
  };
  std::unordered_map<std::string, TokenId> ids;     // token in the byte alphabet -> id
  std::vector<std::optional<std::string>> bytes;    // id -> the bytes it stands for
  std::array<TokenId, 256> byte_ids{};
  std::unordered_map<std::uint64_t, Merge> merges;  // (left id, right id) -> rank, result

  static std::uint64_t pair_key(TokenId a, TokenId b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }
};

/// The bytes a token spelled in the byte alphabet stands for; nullopt if it uses other characters.
std::optional<std::string> token_bytes(std::string_view token) {
  std::string out;
  for (std::size_t pos = 0; pos < token.size();) {
    unicode::Decoded d = unicode::decode_at(token, pos);
    std::optional<std::uint8_t> byte = code_point_to_byte(d.code_point);
    if (!byte) return std::nullopt;
    out += static_cast<char>(*byte);
    pos += d.length;
  }
  return out;
}

void load_encoder(Vocabulary& impl, const std::filesystem::path& path) {
  json::Value root;
  try {
    root = json::parse(files::read_file(path));
  } catch (const FormatError& e) {
    throw FormatError(path.string() + ": " + e.what());
  }
  if (root.kind != json::Kind::Object) throw FormatError(path.string() + ": not a JSON object");
  for (std::size_t i = 0; i < root.keys.size(); ++i) {
    const std::string& token = root.keys[i];
    std::optional<std::uint64_t> id = root.items[i].as_uint64();
    std::optional<std::string> bytes = token_bytes(token);
    if (!id || *id >= (1u << 24))
      throw FormatError(path.string() + ": token " + json::quote(token) + " has no valid id");
    if (!bytes)
      throw FormatError(path.string() + ": token " + json::quote(token) +
                        " uses characters outside GPT-2's byte alphabet");
    if (impl.bytes.size() <= *id) impl.bytes.resize(*id + 1);
    if (impl.bytes[*id])
      throw FormatError(path.string() + ": id " + std::to_string(*id) + " is used twice");
    impl.bytes[*id] = std::move(*bytes);
    impl.ids.emplace(token, static_cast<TokenId>(*id));
  }
  for (unsigned b = 0; b < 256; ++b) {
    auto it = impl.ids.find(byte_symbol(static_cast<std::uint8_t>(b)));
    if (it == impl.ids.end())
      throw FormatError(path.string() + ": byte " + std::to_string(b) + " (" +
                        json::quote(byte_symbol(static_cast<std::uint8_t>(b))) + ") has no token");
    impl.byte_ids[b] = it->second;
  }
}

TokenId known_token(const Vocabulary& impl, const std::string& token,
                    const std::string& where) {
  auto it = impl.ids.find(token);
  if (it == impl.ids.end())
    throw FormatError(where + ": token " + json::quote(token) + " is not in encoder.json");
  return it->second;
}

void load_merges(Vocabulary& impl, const std::filesystem::path& path) {
  const std::string text = files::read_file(path);
  std::size_t rank = 0, line_number = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::string where = path.string() + " line " + std::to_string(line_number);
    std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw FormatError(where + ": expected two tokens separated by one space, got " + json::quote(line));
    std::string left = line.substr(0, space), right = line.substr(space + 1);
    TokenId a = known_token(impl, left, where), b = known_token(impl, right, where);
    TokenId merged = known_token(impl, left + right, where);
    // A pair listed twice takes its last line's rank, as in GPT-2's encoder, Hugging Face and
    // scripts/bpe_reference.py, which build a dict from the lines in order.
    impl.merges.insert_or_assign(Vocabulary::pair_key(a, b), Vocabulary::Merge{rank++, merged});
  }
}

}  // namespace

struct BpeTokenizer::Impl : Vocabulary {
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
};

namespace {

/// A symbol of a piece being merged: a doubly linked list over the piece's bytes.
struct Symbol {
  TokenId id;
  int prev;
  int next;  // -1 at the ends
};

/// An adjacent pair that has a merge. Ordered so the heap's top is the lowest rank.
struct Candidate {
  std::size_t rank;
  int left;
  TokenId a, b;
  bool operator>(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : left > other.left;
  }
};

}  // namespace

void BpeTokenizer::Impl::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  const int n = static_cast<int>(piece.size());
  std::vector<Symbol> symbols(piece.size());
  for (int i = 0; i < n; ++i)
    symbols[i] = {byte_ids[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int left) {
    if (left < 0 || symbols[left].next < 0) return;
    TokenId a = symbols[left].id, b = symbols[symbols[left].next].id;
    if (auto it = merges.find(pair_key(a, b)); it != merges.end()) heap.push({it->second.rank, left, a, b});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  // One round per rank, as GPT-2 does: every occurrence of the best pair, left to right. A merge
  // never creates another occurrence of its own pair (the result is longer than either part).
  std::vector<Candidate> round;
  while (!heap.empty()) {
    round.clear();
    const std::size_t rank = heap.top().rank;
    while (!heap.empty() && heap.top().rank == rank) round.push_back(heap.top()), heap.pop();
    const TokenId merged = merges.at(pair_key(round.front().a, round.front().b)).merged;
    for (const Candidate& c : round) {
      Symbol& left = symbols[c.left];
      if (left.id != c.a || left.next < 0 || symbols[left.next].id != c.b) continue;  // stale
      const int right = left.next;
      left.id = merged;
      left.next = symbols[right].next;
      if (left.next >= 0) symbols[left.next].prev = c.left;
      symbols[right].id = -1;  // dead: no later candidate can match it
      consider(left.prev);
      consider(c.left);
    }
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

BpeTokenizer BpeTokenizer::from_files(const std::filesystem::path& encoder_json,
                                      const std::filesystem::path& vocab_bpe) {
  auto impl = std::make_shared<Impl>();
  load_encoder(*impl, encoder_json);
  load_merges(*impl, vocab_bpe);
  return BpeTokenizer(std::move(impl));
}

BpeTokenizer BpeTokenizer::from_directory(const std::filesystem::path& dir) {
  return from_files(dir / "encoder.json", dir / "vocab.bpe");
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  for (std::string_view piece : pretokenize(text)) impl_->encode_piece(piece, ids);
  return ids;
}

std::string BpeTokenizer::decode(std::span<const TokenId> ids) const {
  std::string text;
  for (TokenId id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= impl_->bytes.size() || !impl_->bytes[id])
      throw RuntimeUsageError("decode: token id " + std::to_string(id) +
                              " is not in the vocabulary (" + std::to_string(vocab_size()) +
                              " ids)");
    text += *impl_->bytes[id];
  }
  return text;
}

std::size_t BpeTokenizer::vocab_size() const { return impl_->bytes.size(); }

std::optional<TokenId> BpeTokenizer::token_id(std::string_view token) const {
  auto it = impl_->ids.find(std::string(token));
  if (it == impl_->ids.end()) return std::nullopt;
  return it->second;
}

}  // namespace cannl::io
