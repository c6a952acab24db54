// `cannl gpt2`: option parsing, tokenizer lookup, and the print-logits / generate modes over
// cannl::nn::Gpt2.
#include "gpt2_command.h"

#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>

#include "cannl/io/bpe_tokenizer.h"
#include "cannl/io/safetensors.h"
#include "cannl/nn/gpt2.h"
#include "cannl/support/config.h"
#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "cannl/support/memory_budget.h"

namespace cannl::app {
namespace {

struct Request {
  std::optional<std::filesystem::path> weights, config;
  bool random_weights = false;
  std::optional<std::string> prompt, ids;
  std::int64_t tokens = 20;
  bool print_logits = false;
  nn::SamplingOptions sampling;
};

Request request_from(const ParsedArgs& args) {
  Request r;
  if (auto w = args.maybe_text("weights")) r.weights = *w;
  if (auto c = args.maybe_text("config")) r.config = *c;
  r.random_weights = args.flag("random-weights");
  r.prompt = args.maybe_text("prompt");
  r.ids = args.maybe_text("ids");
  r.tokens = args.integer("tokens", 20);
  r.print_logits = args.flag("print-logits");
  if (args.has("top-k")) r.sampling.top_k = args.integer("top-k", 0), r.sampling.greedy = false;
  if (args.has("temperature"))
    r.sampling.temperature = args.number("temperature", 1.0), r.sampling.greedy = false;
  if (args.has("seed")) r.sampling.seed = static_cast<std::uint64_t>(args.integer("seed", 0));
  if (r.weights.has_value() == r.random_weights)
    throw RuntimeUsageError("give exactly one of --weights FILE and --random-weights (see cannl gpt2 --help)");
  if (r.prompt && r.ids) throw RuntimeUsageError("give --prompt or --ids, not both");
  return r;
}

std::vector<std::int64_t> parse_ids(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    ids.push_back(parse_integer(item, "--ids", 0, std::numeric_limits<std::int64_t>::max()));
  if (ids.empty()) throw RuntimeUsageError("--ids is empty");
  return ids;
}

/// The directory of encoder.json and vocab.bpe: config key gpt2_vocab_dir, else, in the first
/// directory above the executable that has one, share/cannl/gpt2-bpe (an installed cannl:
/// <prefix>/bin/cannl) or data/gpt2-bpe (the source tree of a build).
std::filesystem::path vocab_dir() {
  if (std::string dir = config::get("gpt2_vocab_dir"); !dir.empty()) return dir;
  std::error_code ec;
  auto here = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (; !here.empty(); here = here.parent_path()) {
    for (const char* candidate : {"share/cannl/gpt2-bpe", "data/gpt2-bpe"})
      if (std::filesystem::exists(here / candidate / "encoder.json", ec)) return here / candidate;
    if (here == here.parent_path()) break;
  }
  throw ConfigError("cannot find share/cannl/gpt2-bpe or data/gpt2-bpe above the executable; set gpt2_vocab_dir");
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string join(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

/// The weights file, opened (and so checked: a regular safetensors file) before anything is
/// compiled: a typo in the path must not cost the compile of the whole model first.
std::optional<io::SafetensorsFile> open_weights(const Request& r) {
  if (!r.weights) return std::nullopt;
  if (!std::filesystem::exists(*r.weights))
    throw IoError("--weights: no such file '" + r.weights->string() + "'");
  return io::SafetensorsFile::open(*r.weights);
}

/// The weights as f32 buffers, checked against the memory budget before the model is compiled
/// (the config's sizes are the user's; parse_gpt2_config checked them against int64 already).
void check_model_memory(const nn::Gpt2Config& c) {
  const auto layers = checked_product({c.n_layer, 12, c.n_embd, c.n_embd});
  const auto tokens = checked_add(c.vocab_size, c.n_positions);
  const auto embeddings = tokens ? checked_mul(*tokens, c.n_embd) : std::nullopt;
  const auto weights = layers && embeddings ? checked_add(*layers, *embeddings) : std::nullopt;
  const auto bytes = weights ? checked_mul(*weights, 4) : std::nullopt;
  memory::check_budget(bytes.value_or(-1), "the GPT-2 weights (" + c.describe() + ")");
}

/// The positions the run needs: the prompt plus what is generated, within the model's context.
std::int64_t window_for(const Request& r, std::int64_t n, const nn::Gpt2Config& config) {
  if (n > config.n_positions)
    throw RuntimeUsageError("the prompt has " + std::to_string(n) + " tokens, more than the model's context of " +
                            std::to_string(config.n_positions) + " positions");
  if (r.print_logits) return n;
  if (r.tokens > config.n_positions - n)
    throw RuntimeUsageError("--tokens " + std::to_string(r.tokens) + ": the prompt's " + std::to_string(n) +
                            " tokens plus the generated ones exceed the model's context of " +
                            std::to_string(config.n_positions) + " positions (at most " +
                            std::to_string(config.n_positions - n) + " more)");
  return n + r.tokens;
}

}  // namespace

const CommandSpec& gpt2_command_spec() {
  constexpr std::int64_t kMaxTokens = 1000000;
  static const CommandSpec spec{
      .name = "gpt2",
      .summary = "GPT-2 inference from a Hugging Face safetensors checkpoint (greedy unless --top-k or\n"
                 "--temperature is given); --random-weights runs a timed dry run of the 124M model.",
      .options = {
          {.name = "weights", .kind = OptionKind::Text, .value_name = "FILE", .help = "safetensors checkpoint"},
          {.name = "random-weights", .kind = OptionKind::Flag, .help = "random weights instead of --weights"},
          {.name = "config", .kind = OptionKind::Text, .value_name = "FILE",
           .help = "config.json (default: the one beside --weights, else GPT-2 124M)"},
          {.name = "prompt", .kind = OptionKind::Text, .value_name = "TEXT", .help = "text prompt (BPE-encoded)"},
          {.name = "ids", .kind = OptionKind::Text, .value_name = "N,N,...", .help = "prompt as token ids"},
          {.name = "tokens", .kind = OptionKind::Int, .value_name = "N", .help = "tokens to generate (default 20)",
           .min = 0, .max = kMaxTokens},
          {.name = "print-logits", .kind = OptionKind::Flag, .help = "print the last position's logits instead"},
          {.name = "top-k", .kind = OptionKind::Int, .value_name = "K", .help = "sample from the K most likely tokens",
           .min = 1, .max = kMaxTokens},
          {.name = "temperature", .kind = OptionKind::Number, .value_name = "T", .help = "sampling temperature",
           .min_number = 0, .max_number = 1000, .exclusive_min = true},
          {.name = "seed", .kind = OptionKind::Int, .value_name = "S",
           .help = "sampling seed (the config key 'seed' is CANNL_SEED here)", .min = 0},
      },
      .notes = "example: cannl gpt2 --weights model.safetensors --prompt \"Hello\" --tokens 8"};
  return spec;
}

int run_gpt2_command(const ParsedArgs& args, std::ostream& out, std::ostream& err) {
  const Request r = request_from(args);
  std::optional<io::SafetensorsFile> weights = open_weights(r);
  const nn::Gpt2Config config = nn::find_gpt2_config(r.weights, r.config);
  check_model_memory(config);
  std::optional<io::BpeTokenizer> tokenizer;
  std::vector<std::int64_t> prompt = parse_ids(r.ids.value_or("50256"));  // <|endoftext|> alone
  if (r.prompt) {
    tokenizer = io::BpeTokenizer::from_directory(vocab_dir());
    const auto encoded = tokenizer->encode(*r.prompt);
    prompt.assign(encoded.begin(), encoded.end());
    if (prompt.empty()) throw RuntimeUsageError("--prompt encodes to no tokens");
  }
  const auto n = static_cast<std::int64_t>(prompt.size());
  const std::int64_t window = window_for(r, n, config);
  err << "gpt2: " << config.describe() << "; prompt of " << n << " tokens, window " << window << "\n";

  auto start = std::chrono::steady_clock::now();
  nn::Gpt2 model(config, runtime::Context::from_config(), std::max<std::int64_t>(window, 1));
  // --print-logits runs the whole-window forward once; generation runs the cached step.
  if (r.print_logits) model.compile_forward();
  else model.compile_step();
  err << "gpt2: compiled in " << ms_since(start) << " ms\n";
  start = std::chrono::steady_clock::now();
  if (weights) model.load_weights(*weights);
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
  // One step of the cache per position: the prompt's, then every new token but the last.
  const auto steps = added.empty() ? 0 : n + static_cast<std::int64_t>(added.size()) - 1;
  err << "gpt2: " << added.size() << " tokens in " << ms << " ms (" << steps
      << " steps of the key-value cache, window " << window << "), "
      << (steps == 0 ? 0.0 : ms / static_cast<double>(steps)) << " ms per token\n";
  out << "tokens: " << join(added) << "\n";
  if (tokenizer) {
    std::vector<io::TokenId> all(prompt.begin(), prompt.end());
    all.insert(all.end(), added.begin(), added.end());
    out << "text: " << tokenizer->decode(all) << "\n";
  }
  return 0;
}

}  // namespace cannl::app
