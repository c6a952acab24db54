#pragma once
// GPT-2 (Hugging Face GPT2LMHeadModel semantics) assembled from cannl blocks: token embedding wte
// plus learned positions wpe, n_layer pre-LN decoder blocks (tanh-GELU MLP of width 4 n_embd,
// causal attention scaled by 1/sqrt(head_dim)), a final LayerNorm ln_f and an lm_head tied to wte
// (logits = h . wte^T). Weights load from a Hugging Face safetensors checkpoint under the official
// file's bare names (wte.weight, h.0.attn.c_attn.weight, ...) or a GPT2LMHeadModel state dict's
// `transformer.`-prefixed ones; Conv1D weights ([in, out]) are transposed and the fused c_attn is
// split into q, k, v on the host while loading.
//
//   auto config = nn::find_gpt2_config("gpt2/model.safetensors", std::nullopt);
//   nn::Gpt2 model(config, runtime::Context::cpu(), /*window=*/32);
//   model.load_weights(io::SafetensorsFile::open("gpt2/model.safetensors"));
//   std::vector<double> next = model.last_logits(std::vector<std::int64_t>{15496, 995});

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cannl/io/safetensors.h"
#include "cannl/nn/blocks.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// GPT-2's hyperparameters (Hugging Face config.json names); the defaults are the 124M model.
///   Gpt2Config{.vocab_size = 100, .n_positions = 16, .n_embd = 32, .n_layer = 2, .n_head = 4}
struct Gpt2Config {
  std::int64_t vocab_size = 50257;
  std::int64_t n_positions = 1024;  // n_ctx in older configs
  std::int64_t n_embd = 768;
  std::int64_t n_layer = 12;
  std::int64_t n_head = 12;
  double layer_norm_epsilon = 1e-5;
  /// Precision of the long sums (the contractions over n_embd or 4 n_embd terms and the
  /// LayerNorm statistics), rounded once per output. Not a Hugging Face key. F64 (the default)
  /// keeps the 124M model's f32 logits within 1.3e-5 of exact; F32 is what PyTorch's GEMMs
  /// do (6.1e-5 there) and runs on the f32 register tiles, the faster path on the CPU.
  ir::DType accumulate = ir::DType::F64;
  /// Precision of the contractions of the cached generation step (Gpt2::step): one position's
  /// dot products over n_embd or 4 n_embd contiguous terms, which the CPU schedule sums in 64
  /// interleaved f32 lanes (vector fma) and a fixed pairwise combine, at memory speed. Measured
  /// against f64 on two 768-wide layers: 3e-5 (F64 accumulation of those sums is a scalar loop,
  /// an order of magnitude slower). The LayerNorms keep `accumulate`.
  ir::DType step_accumulate = ir::DType::F32;

  /// "vocab 50257, n_ctx 1024, n_embd 768, n_layer 12, n_head 12, eps 1e-05".
  std::string describe() const;
};

/// Reads a Hugging Face config.json text: the keys above at the top level (n_ctx is accepted for
/// n_positions; absent keys keep their 124M values). Throws FormatError naming `origin` for
/// malformed JSON or a bad value (non-integer size, n_embd not a multiple of n_head, ...).
///   parse_gpt2_config(R"({"n_embd": 32, "n_head": 4})", "inline").n_embd == 32
Gpt2Config parse_gpt2_config(std::string_view json_text, const std::string& origin);

/// parse_gpt2_config of a file's contents; IoError when it cannot be read.
///   read_gpt2_config("gpt2/config.json")
Gpt2Config read_gpt2_config(const std::filesystem::path& path);

/// `config` when given, else config.json in the weights' directory when it exists, else the 124M
/// values.
///   find_gpt2_config("tests/parity/gpt2/model.safetensors", std::nullopt).n_embd == 32
Gpt2Config find_gpt2_config(const std::optional<std::filesystem::path>& weights,
                            const std::optional<std::filesystem::path>& config);

/// One layer's key-value cache: host literals of batch [window] (positions) and output
/// [n_head, head_dim], state buffers of the context that each generation step writes a row of.
struct Gpt2LayerCache {
  Tensor keys, values;
};

/// The model's blocks (parameters created at construction, labels prefixed by `label`).
///   Gpt2Blocks blocks(config, "gpt2");  blocks.h.size() == config.n_layer
struct Gpt2Blocks {
  Gpt2Blocks(const Gpt2Config& config, const std::string& label);
  /// Logits [window | -> vocab] of the one-hot token ids (batch [window], output [vocab]).
  Tensor logits(const Tensor& ids, std::int64_t window) const;
  /// Logits [| -> vocab] of one position: the token row `token` of wte (a gather) at position
  /// `position`, attending to the positions 0..position of the caches (one per layer, of
  /// `position.range` rows), into which it writes its own keys and values first.
  Tensor step_logits(const ir::StaticSymbol& token, const ir::StaticSymbol& position,
                     const std::vector<Gpt2LayerCache>& caches) const;

  Gpt2Config config;
  Embedding wte, wpe;
  std::vector<DecoderBlock> h;
  LayerNorm ln_f;
};

/// GPT-2 over a fixed window of positions, with two routines compiled on first use:
///  - the forward over the whole window (logits, last_logits): shorter sequences are padded with
///    id 0 after their end, and the causal mask keeps the padding out of every earlier position,
///    so the logits of the real positions are exact;
///  - the step (step, generate): one position per run with a key-value cache of `window`
///    positions per layer kept in the context; the token and the position are the routine's
///    run-time indices, so one compile serves every position.
class Gpt2 {
 public:
  /// Builds the graph (compiling nothing yet); parameters are still unset. Throws
  /// RuntimeUsageError unless 1 <= window <= config.n_positions.
  ///   Gpt2 model(config, runtime::Context::cpu(), 16);
  Gpt2(const Gpt2Config& config, runtime::Context ctx, std::int64_t window,
       const std::string& label = "gpt2");

  /// Compiles the whole-window forward now (logits does it on first use).
  void compile_forward();
  /// Builds and compiles the one-position step with its caches now (step does it on first use).
  void compile_step();

  /// Uploads the checkpoint's tensors (bare or `transformer.`-prefixed names; the buffers
  /// h.N.attn.bias / masked_bias and any other extra tensor are ignored; lm_head.weight, when
  /// present, must equal wte.weight; any floating dtype the reader decodes, converted to f32).
  /// Throws FormatError naming the tensor for a missing or mis-shaped one (with both shapes), one
  /// of an integer or BOOL dtype, or an untied lm_head; every tensor is checked before the first
  /// is uploaded, so after an error the parameters are as they were. Warns once per tensor
  /// holding NaN or infinite values.
  ///   model.load_weights(io::SafetensorsFile::open("model.safetensors"));
  void load_weights(const io::SafetensorsFile& file);
  /// Random parameters as Hugging Face initializes GPT-2 (matrices and embeddings N(0, 0.02),
  /// LayerNorm gains 1, biases 0), drawn on the host from `seed`: a dry run without a checkpoint.
  ///   model.randomize_weights(7);
  void randomize_weights(std::uint64_t seed = 0);

  /// Logits [ids.size(), vocab_size] row-major, as computed in the model's precision. Throws
  /// RuntimeUsageError for an empty sequence, one longer than the window, or an id outside
  /// [0, vocab_size).
  ///   model.logits(ids)[p * vocab + v]
  std::vector<double> logits(std::span<const std::int64_t> ids);
  /// The logits of the last position only.
  ///   std::vector<double> next = model.last_logits(ids);  next.size() == vocab_size
  std::vector<double> last_logits(std::span<const std::int64_t> ids);

  /// The logits of token `id` at `position` after writing its keys and values into the cache:
  /// the logits of the sequence whose earlier positions were the ids stepped before at
  /// 0..position-1 (since the last step at those positions). Throws RuntimeUsageError for a
  /// position outside [0, window) or an id outside [0, vocab_size).
  ///   for (p = 0; p < ids.size(); ++p) next = model.step(ids[p], p);   // == last_logits(ids)
  std::vector<double> step(std::int64_t id, std::int64_t position);

  const Gpt2Config& config() const { return blocks_.config; }
  std::int64_t window() const { return window_; }
  const Gpt2Blocks& blocks() const { return blocks_; }

 private:
  Gpt2Blocks blocks_;
  runtime::Context ctx_;
  std::int64_t window_;
  std::string label_;
  Tensor ids_;
  Tensor logits_;
  std::optional<runtime::Routine> forward_;
  // The step: its run-time indices, caches, logits and routine (built by compile_step).
  ir::StaticSymbol token_, position_;
  std::vector<Gpt2LayerCache> caches_;
  Tensor step_logits_;
  std::optional<runtime::Routine> step_;
};

/// How the next token is chosen: greedy (argmax, lowest id on ties) or sampled from the softmax
/// of logits / temperature restricted to the top_k largest (0 = all), from a seeded generator.
///   SamplingOptions{.greedy = false, .top_k = 40, .temperature = 0.8, .seed = 7}
struct SamplingOptions {
  bool greedy = true;
  std::int64_t top_k = 0;
  double temperature = 1.0;
  std::uint64_t seed = 0;
};

/// A deterministic token chooser: the same options and logits give the same tokens on every run
/// and platform (its uniform draws come from a fixed 64-bit generator, not <random>'s
/// implementation-defined distributions). Throws RuntimeUsageError for temperature <= 0 or a
/// negative top_k when sampling.
///   TokenSampler s({.greedy = true});  s.next(std::vector<double>{0.1, 2.0, -1.0}) == 1
class TokenSampler {
 public:
  explicit TokenSampler(const SamplingOptions& options);
  std::int64_t next(std::span<const double> logits);

 private:
  SamplingOptions options_;
  std::uint64_t state_;
  double uniform();
};

/// Appends `n_tokens` tokens to `prompt`, one step of the key-value cache per position (the
/// prompt's, then each new token's); stops early when the model's window is full. Returns the new
/// tokens only.
///   generate(model, {464, 3290}, 5, {.greedy = true}).size() == 5
std::vector<std::int64_t> generate(Gpt2& model, std::vector<std::int64_t> prompt,
                                   std::int64_t n_tokens, const SamplingOptions& options);

}  // namespace cannl::nn
