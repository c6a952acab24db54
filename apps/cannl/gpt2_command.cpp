// `cannl gpt2`: option parsing, tokenizer lookup, and the print-logits / generate modes over
// cannl::nn::Gpt2.
#include "gpt2_command.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <ostream>
#include <sstream>

#include "cannl/io/bpe_tokenizer.h"
#include "cannl/io/safetensors.h"
#include "cannl/nn/gpt2.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::app {
namespace {

constexpr const char* kUsage =
    "usage: cannl gpt2 (--weights FILE | --random-weights) [--config FILE] "
    "[--prompt TEXT | --ids N,N,...] [--tokens N] [--print-logits] [--top-k K] "
    "[--temperature T] [--seed S]";

struct Request {
  std::optional<std::filesystem::path> weights, config;
  bool random_weights = false;
  std::optional<std::string> prompt, ids;
  std::int64_t tokens = 20;
  bool print_logits = false;
  nn::SamplingOptions sampling;
};

std::int64_t to_int(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw RuntimeUsageError(what + " expects an integer, got '" + text + "'");
  return v;
}

double to_double(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw RuntimeUsageError(what + " expects a number, got '" + text + "'");
  return v;
}

/// Applies one option that takes a value; false when `name` is not one.
bool apply_valued(Request& r, const std::string& name, const std::string& v) {
  if (name == "--weights") r.weights = v;
  else if (name == "--config") r.config = v;
  else if (name == "--prompt") r.prompt = v;
  else if (name == "--ids") r.ids = v;
  else if (name == "--tokens") r.tokens = to_int(v, name);
  else if (name == "--top-k") { r.sampling.top_k = to_int(v, name); r.sampling.greedy = false; }
  else if (name == "--temperature") { r.sampling.temperature = to_double(v, name); r.sampling.greedy = false; }
  else if (name == "--seed") r.sampling.seed = static_cast<std::uint64_t>(to_int(v, name));
  else return false;
  return true;
}

Request parse_args(const std::vector<std::string>& args) {
  Request r;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const auto eq = name.find('=');
    const bool inline_value = name.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) { value = name.substr(eq + 1); name = name.substr(0, eq); }
    if (name == "--print-logits") { r.print_logits = true; continue; }
    if (name == "--random-weights") { r.random_weights = true; continue; }
    if (!inline_value && i + 1 < args.size()) value = args[i + 1];
    else if (!inline_value) throw RuntimeUsageError(name + " needs a value\n" + kUsage);
    if (!apply_valued(r, name, value)) throw RuntimeUsageError("unknown option '" + name + "'\n" + kUsage);
    if (!inline_value) ++i;
  }
  if (r.weights.has_value() == r.random_weights)
    throw RuntimeUsageError(std::string("give exactly one of --weights FILE and --random-weights\n") + kUsage);
  if (r.prompt && r.ids) throw RuntimeUsageError("give --prompt or --ids, not both");
  if (r.tokens < 0) throw RuntimeUsageError("--tokens must be >= 0");
  return r;
}

std::vector<std::int64_t> parse_ids(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) ids.push_back(to_int(item, "--ids"));
  if (ids.empty()) throw RuntimeUsageError("--ids is empty");
  return ids;
}

/// The directory of encoder.json and vocab.bpe: config key gpt2_vocab_dir, else data/gpt2-bpe in
/// the first directory above the executable that has one (the source tree of a build).
std::filesystem::path vocab_dir() {
  if (std::string dir = config::get("gpt2_vocab_dir"); !dir.empty()) return dir;
  std::error_code ec;
  auto here = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (; !here.empty(); here = here.parent_path()) {
    if (std::filesystem::exists(here / "data/gpt2-bpe/encoder.json", ec)) return here / "data/gpt2-bpe";
    if (here == here.parent_path()) break;
  }
  throw ConfigError("cannot find data/gpt2-bpe above the executable; set gpt2_vocab_dir");
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string join(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

}  // namespace

int run_gpt2_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const Request r = parse_args(args);
  const nn::Gpt2Config config = nn::find_gpt2_config(r.weights, r.config);
  std::optional<io::BpeTokenizer> tokenizer;
  std::vector<std::int64_t> prompt = parse_ids(r.ids.value_or("50256"));  // <|endoftext|> alone
  if (r.prompt) {
    tokenizer = io::BpeTokenizer::from_directory(vocab_dir());
    const auto encoded = tokenizer->encode(*r.prompt);
    prompt.assign(encoded.begin(), encoded.end());
    if (prompt.empty()) throw RuntimeUsageError("--prompt encodes to no tokens");
  }
  const auto n = static_cast<std::int64_t>(prompt.size());
  const std::int64_t window = std::min(config.n_positions, r.print_logits ? n : n + r.tokens);
  err << "gpt2: " << config.describe() << "; prompt of " << n << " tokens, window " << window << "\n";

  auto start = std::chrono::steady_clock::now();
  nn::Gpt2 model(config, runtime::Context::from_config(), std::max<std::int64_t>(window, 1));
  err << "gpt2: compiled in " << ms_since(start) << " ms\n";
  start = std::chrono::steady_clock::now();
  if (r.weights) model.load_weights(io::SafetensorsFile::open(*r.weights));
  else model.randomize_weights(r.sampling.seed);
  err << "gpt2: " << (r.weights ? "loaded weights" : "random weights") << " in " << ms_since(start) << " ms\n";

  if (r.print_logits) {
    start = std::chrono::steady_clock::now();
    const std::vector<double> logits = model.last_logits(prompt);
    err << "gpt2: forward over " << n << " tokens in " << ms_since(start) << " ms\n";
    char line[64];
    for (double v : logits) {
      std::snprintf(line, sizeof line, "%.9g\n", v);
      out << line;
    }
    return 0;
  }
  start = std::chrono::steady_clock::now();
  const auto added = nn::generate(model, prompt, r.tokens, r.sampling);
  const double ms = ms_since(start);
  err << "gpt2: " << added.size() << " tokens in " << ms << " ms, "
      << (added.empty() ? 0.0 : ms / static_cast<double>(added.size())) << " ms per token (window "
      << window << ")\n";
  out << "tokens: " << join(added) << "\n";
  if (tokenizer) {
    std::vector<io::TokenId> all(prompt.begin(), prompt.end());
    all.insert(all.end(), added.begin(), added.end());
    out << "text: " << tokenizer->decode(all) << "\n";
  }
  return 0;
}

}  // namespace cannl::app
