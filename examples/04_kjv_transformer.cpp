// Tutorial 4: a character-level transformer language model on the King James Bible.
//
// A small decoder-only (GPT-style, pre-LN) transformer learns to predict the next character of
// the text from the window before it. The training windows are drawn at seeded random offsets
// from the first 90% of the text; the last 10% is held out to measure the validation loss. At the
// end the model continues a prompt, one character at a time.
//
// The text comes from Debian's `bible-kjv` and `bible-kjv-text` packages (scripts/setup.sh
// installs them), dumped by their `bible` program; verse references are stripped.
//
// Run from the project root:  build/examples/example_04_kjv_transformer [--quick]
// (it trains for a number of steps, not epochs: --epochs is ignored)
#include <cannl/cannl.h>
#include <cannl/support/process.h>

#include <cmath>
#include <cstdio>

#include "example_support.h"

using namespace cannl;
using examples::SplitMix64;

namespace {

constexpr const char* kInstallHint =
    "the King James Bible is not installed; install the Debian packages bible-kjv and "
    "bible-kjv-text (apt-get install bible-kjv bible-kjv-text, or run scripts/setup.sh)";

/// Every verse, one per line, without its reference ("Ge1:1 In the beginning..." -> "In the...").
std::string bible_text() {
  auto bible = process::capture({"bible", "-f", "Genesis 1:1-Revelation 22:21"});
  const std::string& raw = bible.output;
  if (!bible.result.started || bible.result.exit_status != 0 || raw.size() < 1000000)
    throw examples::DataUnavailable(kInstallHint);
  std::string text;
  for (std::size_t at = 0; at < raw.size();) {
    std::size_t end = raw.find('\n', at);
    if (end == std::string::npos) end = raw.size();
    const std::size_t space = raw.find(' ', at);
    if (space < end) text.append(raw, space + 1, end - space - 1).push_back('\n');
    at = end + 1;
  }
  return text;
}

struct Vocabulary {
  std::string chars;
  std::vector<std::int64_t> ids_of(const std::string& text) const {
    std::int64_t table[256] = {};
    for (std::size_t i = 0; i < chars.size(); ++i)
      table[static_cast<unsigned char>(chars[i])] = static_cast<std::int64_t>(i);
    std::vector<std::int64_t> ids;
    ids.reserve(text.size());
    for (char c : text) ids.push_back(table[static_cast<unsigned char>(c)]);
    return ids;
  }
  std::int64_t size() const { return static_cast<std::int64_t>(chars.size()); }
};

Vocabulary make_vocabulary(const std::string& text) {
  bool seen[256] = {};
  for (char c : text) seen[static_cast<unsigned char>(c)] = true;
  Vocabulary v;
  for (int c = 0; c < 256; ++c)
    if (seen[c]) v.chars.push_back(static_cast<char>(c));
  return v;
}

struct Settings {
  std::int64_t window, d_model, layers, heads, batch_size, steps, report_every, val_windows;
  double lr;
};


/// `count` windows of window + 1 ids at random offsets of ids[begin, end): inputs and targets.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> random_windows(
    const std::vector<std::int64_t>& ids, std::size_t begin, std::size_t end, std::int64_t count,
    std::int64_t window, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::int64_t> x, y;
  const auto w = static_cast<std::size_t>(window);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::size_t at = begin + rng.below(end - begin - w - 1);
    x.insert(x.end(), ids.begin() + static_cast<std::ptrdiff_t>(at),
             ids.begin() + static_cast<std::ptrdiff_t>(at + w));
    y.insert(y.end(), ids.begin() + static_cast<std::ptrdiff_t>(at + 1),
             ids.begin() + static_cast<std::ptrdiff_t>(at + w + 1));
  }
  return {x, y};
}

/// Mean loss per character on held-out windows, computed on the host from the logits.
double validation_loss(runtime::Context& ctx, const nn::DecoderLm& model,
                       const std::vector<std::int64_t>& ids, std::size_t begin, const Settings& s) {
  auto [x, y] = random_windows(ids, begin, ids.size(), s.val_windows, s.window, 99);
  Tensor logits = model.logits(nn::ids_literal("val_x", x, {s.val_windows, s.window}));
  auto routine = train::compile_forward(ctx, {logits}, "validation");
  ctx.run(routine);
  return examples::mean_nll(ctx.get_values(logits.value()), y,
                            static_cast<std::size_t>(model.options.vocab));
}

/// Continues `prompt` by `count` characters sampled at temperature 0.8, reading the logits of
/// the last position of the (at most `window`) characters before.
std::string sample(runtime::Context& ctx, const nn::DecoderLm& model, const Vocabulary& v,
                   const std::string& prompt, int count) {
  Tensor ids = nn::ids_literal("prompt",
                               std::vector<std::int64_t>(static_cast<std::size_t>(model.options.window), 0),
                               {1, model.options.window});
  Tensor logits = model.logits(ids);
  auto routine = train::compile_forward(ctx, {logits}, "sample");
  SplitMix64 rng(5);
  std::vector<std::int64_t> text = v.ids_of(prompt);
  for (int i = 0; i < count; ++i) {
    const auto n = std::min<std::size_t>(text.size(), static_cast<std::size_t>(model.options.window));
    std::vector<double> window(static_cast<std::size_t>(model.options.window), 0.0);
    for (std::size_t k = 0; k < n; ++k) window[k] = static_cast<double>(text[text.size() - n + k]);
    ctx.set_values(ids.value(), window);
    ctx.run(routine);
    const std::vector<double> all = ctx.get_values(logits.value());
    const double* last = &all[(n - 1) * static_cast<std::size_t>(model.options.vocab)];
    text.push_back(static_cast<std::int64_t>(
        examples::sample_from_logits(last, static_cast<std::size_t>(model.options.vocab), rng, 0.8)));
  }
  std::string out;
  for (auto id : text) out += v.chars[static_cast<std::size_t>(id)];
  return out;
}

/// Runs the steps, printing the mean training loss of every `report_every` steps.
double train_steps(train::TrainingStep& step, const Settings& s) {
  double mean = NAN;
  for (std::int64_t b = 0; b < s.steps; b += s.report_every) {
    step.ctx.run(step.reset_loss);
    const std::int64_t until = std::min(s.steps, b + s.report_every);
    for (std::int64_t k = b; k < until; ++k) {
      const std::int64_t at[] = {k};
      step.ctx.run(step.step, at);
    }
    mean = step.ctx.get_values(step.epoch_loss).at(0) / static_cast<double>(until - b);
    std::printf("step %lld/%lld: train loss %.4f\n", static_cast<long long>(until),
                static_cast<long long>(s.steps), mean);
    std::fflush(stdout);
  }
  return mean;
}

int run(const examples::ExampleArgs& args) {
  if (args.quick) examples::use_quick_compile_settings();
  const Settings s = args.quick ? Settings{.window = 16,
                                           .d_model = 32,
                                           .layers = 1,
                                           .heads = 4,
                                           .batch_size = 8,
                                           .steps = 30,
                                           .report_every = 10,
                                           .val_windows = 16,
                                           .lr = 1e-2}
                                : Settings{.window = 64,
                                           .d_model = 64,
                                           .layers = 2,
                                           .heads = 4,
                                           .batch_size = 16,
                                           .steps = 1000,
                                           .report_every = 100,
                                           .val_windows = 256,
                                           .lr = 3e-3};
  const std::string text = bible_text();
  const Vocabulary v = make_vocabulary(text);
  const std::vector<std::int64_t> ids = v.ids_of(text);
  const std::size_t split = ids.size() * 9 / 10;
  std::printf(
      "King James Bible: %zu characters, vocabulary of %lld; %lld steps of %lld windows of "
      "%lld%s\n",
      text.size(), static_cast<long long>(v.size()), static_cast<long long>(s.steps),
      static_cast<long long>(s.batch_size), static_cast<long long>(s.window),
      args.quick ? " (quick run)" : "");
  std::fflush(stdout);

  nn::DecoderLm model("", {.vocab = v.size(),
                           .window = s.window,
                           .d_model = s.d_model,
                           .layers = s.layers,
                           .heads = s.heads});
  auto [x, y] = random_windows(ids, 0, split, s.steps * s.batch_size, s.window, 1);
  ir::StaticSymbol batch{ir::fresh_symbol(), s.steps, "batch"};
  const std::vector<std::int64_t> dims{s.steps, s.batch_size, s.window};
  Tensor logits = model.logits(slice_batch(nn::ids_literal("train_x", x, dims), batch));
  Tensor targets =
      nn::one_hot_of_ids(slice_batch(nn::ids_literal("train_y", y, dims), batch), v.size());
  // AdamW, a short linear warm-up then a cosine decay to a tenth, gradients clipped to norm 1.
  const nn::LrSchedule schedule{.kind = nn::ScheduleKind::WarmupCosine,
                                .lr = s.lr,
                                .warmup_steps = s.steps / 20 + 1,
                                .total_steps = s.steps,
                                .min_lr = s.lr / 10};
  auto step = train::compile_step(runtime::Context::cpu(), nn::cross_entropy_loss(logits, targets),
                                  {.optimizer = train::Optimizer::AdamW,
                                   .adam = {.schedule = schedule, .weight_decay = 0.01},
                                   .clip_grad_norm = 1.0,
                                   .batch = batch,
                                   .n_batches = s.steps});
  const double train_loss = train_steps(step, s);
  const double val_loss = validation_loss(step.ctx, model, ids, split, s);
  std::printf("sample: %s\n",
              sample(step.ctx, model, v, "And God said", args.quick ? 20 : 300).c_str());
  std::printf("train loss %.4f, validation loss %.4f (uniform: %.4f)\n", train_loss, val_loss,
              std::log(static_cast<double>(v.size())));
  return std::isfinite(val_loss) && val_loss < std::log(static_cast<double>(v.size())) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main("kjv", argc, argv, run);
}
