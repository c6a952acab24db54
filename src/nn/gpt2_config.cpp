// GPT-2 hyperparameters from a Hugging Face config.json. Only top-level numbers matter, so a small
// scanner reads the top-level object and skips nested values (the io layer's JSON parser is private
// to it); anything malformed is a FormatError naming the file.
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "cannl/nn/gpt2.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"

namespace cannl::nn {
namespace {

class TopLevelScanner {
 public:
  TopLevelScanner(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  /// Top-level keys whose values are numbers, with their literal text.
  std::map<std::string, std::string> numbers() {
    std::map<std::string, std::string> out;
    expect('{');
    if (peek() == '}') return out;
    while (true) {
      const std::string key = string();
      expect(':');
      skip_ws();
      const std::size_t start = i_;
      const bool is_number = peek() == '-' || std::isdigit(static_cast<unsigned char>(peek()));
      value();
      if (is_number) out[key] = std::string(s_.substr(start, i_ - start));
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      return out;
    }
  }

 private:
  std::string_view s_;
  const std::string& origin_;
  std::size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(origin_ + ": invalid JSON at byte " + std::to_string(i_) + ": " + what);
  }
  void skip_ws() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
  char peek() { skip_ws(); return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') ++i_;  // keys of interest have no escapes; keep the escaped char
      if (i_ < s_.size()) out += s_[i_++];
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  void value(int depth = 0) {
    if (depth > 64) fail("nesting too deep");
    const char c = peek();
    if (c == '"') { string(); return; }
    if (c == '{' || c == '[') return container(c == '{' ? '}' : ']', c == '{', depth);
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) ||
                              s_[i_] == '-' || s_[i_] == '+' || s_[i_] == '.'))
      ++i_;
    if (i_ == start) fail("expected a value");
  }
  void container(char close, bool object, int depth) {
    ++i_;
    if (peek() == close) { ++i_; return; }
    while (true) {
      if (object) { string(); expect(':'); }
      value(depth + 1);
      if (peek() == ',') { ++i_; continue; }
      expect(close);
      return;
    }
  }
};

std::int64_t positive_int(const std::string& text, const std::string& key, const std::string& origin) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v <= 0)
    throw FormatError(origin + ": " + key + " must be a positive integer, got " + text);
  return v;
}

double finite_number(const std::string& text, const std::string& key, const std::string& origin) {
  double v = 0;
  std::istringstream in(text);
  in >> v;
  if (!in || !in.eof() || !std::isfinite(v) || v < 0)
    throw FormatError(origin + ": " + key + " must be a finite number >= 0, got " + text);
  return v;
}

/// The weights' sizes in 64 bits: wte and wpe, and per layer the attention (4 n_embd^2) and MLP
/// (8 n_embd^2) matrices plus the attention scores of one window (n_head n_ctx^2). A config whose
/// counts overflow is a ShapeError here, before any tensor is built from it.
void check_parameter_count(const Gpt2Config& c, const std::string& origin) {
  auto fail = [&](const std::string& what) {
    throw ShapeError(origin + ": size overflow: " + what + " (" + c.describe() +
                     ") exceeds the 64-bit range; check n_embd, n_positions, vocab_size and n_layer");
  };
  const auto square = checked_mul(c.n_embd, c.n_embd);
  const auto per_layer = square ? checked_mul(*square, 12) : std::nullopt;
  if (!per_layer) fail("a layer's weights, 12 x n_embd^2");
  const auto layers = checked_mul(*per_layer, c.n_layer);
  if (!layers) fail("the layers' weights, n_layer x 12 x n_embd^2");
  const auto tokens = checked_add(c.vocab_size, c.n_positions);
  const auto embeddings = tokens ? checked_mul(*tokens, c.n_embd) : std::nullopt;
  if (!embeddings || !checked_add(*embeddings, *layers)) fail("the embeddings, (vocab_size + n_positions) x n_embd");
  const auto scores = checked_product({c.n_head, c.n_positions, c.n_positions, 8});
  if (!scores) fail("the attention scores, n_head x n_positions^2");
}

}  // namespace

std::string Gpt2Config::describe() const {
  std::ostringstream out;
  out << "vocab " << vocab_size << ", n_ctx " << n_positions << ", n_embd " << n_embd
      << ", n_layer " << n_layer << ", n_head " << n_head << ", eps " << layer_norm_epsilon;
  return out.str();
}

Gpt2Config parse_gpt2_config(std::string_view json_text, const std::string& origin) {
  const auto numbers = TopLevelScanner(json_text, origin).numbers();
  Gpt2Config c;
  const auto set = [&](const char* key, std::int64_t& field) {
    if (auto it = numbers.find(key); it != numbers.end()) field = positive_int(it->second, key, origin);
  };
  set("n_ctx", c.n_positions);
  set("n_positions", c.n_positions);  // the current name wins over the legacy one
  set("vocab_size", c.vocab_size);
  set("n_embd", c.n_embd);
  set("n_layer", c.n_layer);
  set("n_head", c.n_head);
  if (auto it = numbers.find("layer_norm_epsilon"); it != numbers.end())
    c.layer_norm_epsilon = finite_number(it->second, "layer_norm_epsilon", origin);
  if (c.n_embd % c.n_head != 0)
    throw FormatError(origin + ": n_embd (" + std::to_string(c.n_embd) +
                      ") must be a multiple of n_head (" + std::to_string(c.n_head) + ")");
  check_parameter_count(c, origin);
  return c;
}

Gpt2Config read_gpt2_config(const std::filesystem::path& path) {
  std::string text;
  try {
    text = files::read_file(path);  // a regular file only: a FIFO would block
  } catch (const IoError& e) {
    throw IoError(std::string("cannot read GPT-2 config: ") + e.what());
  }
  return parse_gpt2_config(text, path.string());
}

Gpt2Config find_gpt2_config(const std::optional<std::filesystem::path>& weights,
                            const std::optional<std::filesystem::path>& config) {
  if (config) return read_gpt2_config(*config);
  if (weights) {
    const auto beside = weights->parent_path() / "config.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(beside, ec)) return read_gpt2_config(beside);
  }
  return Gpt2Config{};
}

}  // namespace cannl::nn
