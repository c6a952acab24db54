// Tutorial 2: makemore on English first names (after A. Karpathy's makemore lectures).
//
// Five character-level models learn to continue a name, from the simplest to a transformer:
//   1. bigram counts: P(next | previous) from smoothed counts (no training, computed on the host);
//   2. bigram net: the same table as a parameter, learned by gradient descent;
//   3. MLP: embeddings of the previous 3 characters -> tanh hidden layer -> logits;
//   4. MLP + batch norm before the tanh;
//   5. a small pre-LN transformer reading the whole name so far.
// Every model is scored on the same deterministic train/dev/test split (80/10/10 of a seeded
// shuffle of the names) by the same host code: the mean negative log-likelihood per character,
// the end of a name included. Each model then generates a few names.
//
// Run from the project root:  build/examples/example_02_makemore [--quick] [--epochs N]
//                              [--data-dir DIR]
// The last line compares the MLP's dev loss with the bigram's.
#include <cannl/cannl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>

#include "example_support.h"

using namespace cannl;
using examples::SplitMix64;

namespace {

constexpr std::uint64_t kSplitSeed = 2026;

// ---- data ----

/// The characters of the names plus '.', the start/end marker, which gets id 0.
struct Vocabulary {
  std::string chars = ".";
  std::int64_t id(char c) const { return static_cast<std::int64_t>(chars.find(c)); }
  std::int64_t size() const { return static_cast<std::int64_t>(chars.size()); }
};

struct Split {
  std::vector<std::string> train, dev, test;
};

std::vector<std::string> load_names(const std::string& data_dir) {
  const std::string text =
      examples::read_file(data_dir + "/names/first-names-en.txt",
                          "run from the project root or pass --data-dir <project>/data");
  std::vector<std::string> names;
  std::string name;
  for (char c : text + "\n") {
    if (c == '\n' || c == '\r') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return names;
}

Vocabulary make_vocabulary(const std::vector<std::string>& names) {
  std::string seen;
  for (const auto& n : names)
    for (char c : n)
      if (seen.find(c) == std::string::npos) seen += c;
  std::sort(seen.begin(), seen.end());
  return Vocabulary{"." + seen};
}

Split split_names(std::vector<std::string> names) {
  SplitMix64 rng(kSplitSeed);
  rng.shuffle(names);
  const auto n = names.size(), n_train = n * 8 / 10, n_dev = n / 10;
  Split s;
  s.train.assign(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(n_train));
  s.dev.assign(names.begin() + static_cast<std::ptrdiff_t>(n_train),
               names.begin() + static_cast<std::ptrdiff_t>(n_train + n_dev));
  s.test.assign(names.begin() + static_cast<std::ptrdiff_t>(n_train + n_dev), names.end());
  return s;
}

/// (previous `context` characters -> next character) pairs; a name of length L gives L + 1
/// pairs, the last predicting the end marker. Contexts start filled with '.'.
struct ContextExamples {
  std::int64_t context = 1;
  std::vector<std::int64_t> x;  // size() * context ids
  std::vector<std::int64_t> y;
  std::int64_t size() const { return static_cast<std::int64_t>(y.size()); }
};

ContextExamples context_examples(const std::vector<std::string>& names, const Vocabulary& v,
                                 std::int64_t context) {
  ContextExamples ex{context, {}, {}};
  for (const auto& name : names) {
    std::vector<std::int64_t> window(static_cast<std::size_t>(context), 0);
    for (char c : name + ".") {
      ex.x.insert(ex.x.end(), window.begin(), window.end());
      ex.y.push_back(v.id(c));
      window.erase(window.begin());
      window.push_back(v.id(c));
    }
  }
  return ex;
}

/// The first n examples, in an order shuffled once with `seed` (consecutive examples of one name
/// would otherwise share a batch).
ContextExamples shuffled_prefix(const ContextExamples& ex, std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(ex.size()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  SplitMix64(seed).shuffle(order);
  ContextExamples out{ex.context, {}, {}};
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    const auto from =
        ex.x.begin() + static_cast<std::ptrdiff_t>(k * static_cast<std::size_t>(ex.context));
    out.x.insert(out.x.end(), from, from + ex.context);
    out.y.push_back(ex.y[k]);
  }
  return out;
}

// ---- reporting ----

struct ModelReport {
  std::string name;
  double train = NAN, dev = NAN, test = NAN;  // mean NLL per character
  std::vector<std::string> samples;
};

void print_report(const ModelReport& r) {
  std::printf("%-14s train %.4f  dev %.4f  test %.4f   samples:", r.name.c_str(), r.train, r.dev,
              r.test);
  for (const auto& s : r.samples) std::printf(" %s", s.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

/// Names drawn from `next_logits` (logits of the next character given the name so far).
std::vector<std::string> sample_names(
    const Vocabulary& v, int count, std::uint64_t seed,
    const std::function<std::vector<double>(const std::string&)>& next_logits) {
  SplitMix64 rng(seed);
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    std::string name;
    while (name.size() < 20) {
      const std::vector<double> logits = next_logits(name);
      const auto id = examples::sample_from_logits(logits.data(), logits.size(), rng);
      if (id == 0) break;
      name += v.chars[id];
    }
    names.push_back(name);
  }
  return names;
}

/// The last `context` characters of ".....name" as ids.
std::vector<std::int64_t> context_of(const std::string& name, const Vocabulary& v,
                                     std::int64_t context) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(context), 0);
  for (char c : name) {
    ids.erase(ids.begin());
    ids.push_back(v.id(c));
  }
  return ids;
}

// ---- 1. bigram counts ----

/// log P(next | previous) from counts + 1 (add-one smoothing), as rows of logits.
std::vector<double> bigram_log_probs(const ContextExamples& train, std::int64_t vocab) {
  const auto n = static_cast<std::size_t>(vocab);
  std::vector<double> table(n * n, 1.0);
  for (std::size_t i = 0; i < train.y.size(); ++i)
    table[static_cast<std::size_t>(train.x[i]) * n + static_cast<std::size_t>(train.y[i])] += 1;
  for (std::size_t row = 0; row < n; ++row) {
    double total = 0;
    for (std::size_t c = 0; c < n; ++c) total += table[row * n + c];
    for (std::size_t c = 0; c < n; ++c) table[row * n + c] = std::log(table[row * n + c] / total);
  }
  return table;
}

double bigram_nll(const std::vector<double>& table, const ContextExamples& ex, std::int64_t vocab) {
  std::vector<double> logits;
  for (std::int64_t prev : ex.x)
    logits.insert(logits.end(), table.begin() + prev * vocab, table.begin() + (prev + 1) * vocab);
  return examples::mean_nll(logits, ex.y, static_cast<std::size_t>(vocab));
}

ModelReport bigram_counts(const Split& split, const Vocabulary& v) {
  const auto train = context_examples(split.train, v, 1);
  const std::vector<double> table = bigram_log_probs(train, v.size());
  ModelReport r{"bigram counts",
                bigram_nll(table, train, v.size()),
                bigram_nll(table, context_examples(split.dev, v, 1), v.size()),
                bigram_nll(table, context_examples(split.test, v, 1), v.size()),
                {}};
  r.samples = sample_names(v, 5, 1, [&](const std::string& name) {
    const std::int64_t prev = context_of(name, v, 1)[0];
    return std::vector<double>(table.begin() + prev * v.size(),
                               table.begin() + (prev + 1) * v.size());
  });
  return r;
}

// ---- 2-4. neural models of a fixed context ----

/// A model mapping context ids (batch [..., context], or batch [...] when context is 1) to
/// logits over the vocabulary (output axis [vocab]).
struct ContextModel {
  std::string title;  // for people
  std::string name;   // prefixes its tensors and routines (an identifier)
  std::int64_t context = 1;
  std::function<Tensor(const Tensor& ids, bool training)> logits;
};

struct TrainSettings {
  int epochs = 10;
  std::int64_t batch_size = 64;
  std::int64_t max_batches = 1 << 30;  // caps an epoch (the quick form)
  double lr = 1e-2;                    // AdamW's peak rate, annealed to lr / 10 along a cosine
  double weight_decay = 0.0;
};

/// AdamW over the whole run with a cosine learning-rate schedule.
train::StepOptions step_options(const TrainSettings& s, const ir::StaticSymbol& batch,
                                std::int64_t n_batches, const std::string& name) {
  const nn::LrSchedule schedule{.kind = nn::ScheduleKind::Cosine,
                                .lr = s.lr,
                                .total_steps = s.epochs * n_batches,
                                .min_lr = s.lr / 10};
  return {.optimizer = train::Optimizer::AdamW,
          .adam = {.schedule = schedule, .weight_decay = s.weight_decay},
          .batch = batch,
          .n_batches = n_batches,
          .name = name};
}

/// Batch dims of n examples of a model: [lead..., context], the context axis dropped when it is 1.
std::vector<std::int64_t> ids_dims(std::vector<std::int64_t> lead, std::int64_t context) {
  if (context > 1) lead.push_back(context);
  return lead;
}

/// Host NLL of the model on each of `sets` (train, dev, test), from one forward routine sharing
/// the trained parameters (one compilation for the three).
std::vector<double> evaluate(runtime::Context& ctx, const ContextModel& m,
                             const std::vector<ContextExamples>& sets, std::int64_t vocab) {
  std::vector<Tensor> logits;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const auto& ex = sets[i];
    logits.push_back(m.logits(nn::ids_literal(m.name + "_eval" + std::to_string(i), ex.x,
                                              ids_dims({ex.size()}, m.context)),
                              false));
  }
  auto routine = train::compile_forward(ctx, logits, m.name + "_eval");
  ctx.run(routine);
  std::vector<double> losses;
  for (std::size_t i = 0; i < sets.size(); ++i)
    losses.push_back(examples::mean_nll(ctx.get_values(logits[i].value()), sets[i].y,
                                        static_cast<std::size_t>(vocab)));
  return losses;
}

std::vector<std::string> sample_context_model(runtime::Context& ctx, const ContextModel& m,
                                              const Vocabulary& v) {
  Tensor ids = nn::ids_literal(m.name + "_sample",
                               std::vector<std::int64_t>(static_cast<std::size_t>(m.context), 0),
                               ids_dims({1}, m.context));
  Tensor logits = m.logits(ids, false);
  auto routine = train::compile_forward(ctx, {logits}, m.name + "_sample");
  return sample_names(v, 5, 1, [&](const std::string& name) {
    const auto context = context_of(name, v, m.context);
    ctx.set_values(ids.value(), std::vector<double>(context.begin(), context.end()));
    ctx.run(routine);
    return ctx.get_values(logits.value());
  });
}

ModelReport train_context_model(const ContextModel& m, const Split& split, const Vocabulary& v,
                                const TrainSettings& s) {
  const auto all_train = context_examples(split.train, v, m.context);
  const std::int64_t n_batches = std::min(s.max_batches, all_train.size() / s.batch_size);
  const auto train = shuffled_prefix(all_train, n_batches * s.batch_size, 7);
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, m.name + "_batch"};
  Tensor x =
      nn::ids_literal(m.name + "_x", train.x, ids_dims({n_batches, s.batch_size}, m.context));
  Tensor y = nn::ids_literal(m.name + "_y", train.y, {n_batches, s.batch_size});
  Tensor loss = nn::cross_entropy_loss(m.logits(slice_batch(x, batch), true),
                                       nn::one_hot_of_ids(slice_batch(y, batch), v.size()));
  auto step =
      train::compile_step(runtime::Context::cpu(), loss, step_options(s, batch, n_batches, m.name));
  train::fit(step, {.epochs = s.epochs, .on_epoch = [&](const train::EpochReport& e) {
                      if (e.epoch == 1 || e.epoch == e.epochs || e.epoch % 5 == 0)
                        std::printf("  %s epoch %d/%d: train loss %.4f (%.0f steps/s)\n",
                                    m.title.c_str(), e.epoch, e.epochs, e.mean_loss,
                                    e.steps_per_second);
                    }});
  const auto losses = evaluate(step.ctx, m,
                               {all_train, context_examples(split.dev, v, m.context),
                                context_examples(split.test, v, m.context)},
                               v.size());
  ModelReport r{m.title, losses[0], losses[1], losses[2], {}};
  r.samples = sample_context_model(step.ctx, m, v);
  return r;
}

ContextModel bigram_net(std::int64_t vocab) {
  Tensor w = param("bigram_w", {.input = nn::Dims{vocab},
                                .output = nn::Dims{vocab},
                                .init = {.kind = InitKind::Normal, .stddev = 0.01}});
  return {"bigram net", "bigram_net", 1,
          [=](const Tensor& ids, bool) { return w * nn::one_hot_of_ids(ids, vocab); }};
}

/// Embeddings of the context characters laid side by side: batch [...], output [context, dim].
Tensor embed_context(const Tensor& table, const Tensor& ids, std::int64_t vocab) {
  return einsum("...c|d => ...|cd", table * nn::one_hot_of_ids(ids, vocab));
}

ContextModel mlp(std::int64_t vocab, std::int64_t context, std::int64_t emb, std::int64_t hidden) {
  Tensor table = param("mlp_emb", {.input = nn::Dims{vocab},
                                   .output = nn::Dims{emb},
                                   .init = {.kind = InitKind::Normal, .stddev = 1.0}});
  nn::Linear fc1("mlp_fc1", {hidden}), fc2("mlp_fc2", {vocab});
  return {"mlp", "mlp", context, [=](const Tensor& ids, bool) {
            return fc2(tanh(fc1(embed_context(table, ids, vocab))));
          }};
}

ContextModel mlp_batch_norm(std::int64_t vocab, std::int64_t context, std::int64_t emb,
                            std::int64_t hidden) {
  Tensor table = param("bn_emb", {.input = nn::Dims{vocab},
                                  .output = nn::Dims{emb},
                                  .init = {.kind = InitKind::Normal, .stddev = 1.0}});
  // The batch norm's beta replaces the first layer's bias.
  nn::Linear fc1("bn_fc1", {hidden}, /*bias=*/false), fc2("bn_fc2", {vocab});
  nn::BatchNorm1d bn("bn", {.num_features = hidden});
  return {"mlp+batchnorm", "mlp_bn", context, [=](const Tensor& ids, bool training) {
            const Tensor h = fc1(embed_context(table, ids, vocab));
            return fc2(tanh(bn(h, training ? nn::Mode::Train : nn::Mode::Eval)));
          }};
}

// ---- 5. transformer ----

/// Every name as ".name" -> "name." over a fixed window, padded with '.', with weight 1 on the
/// positions that count (up to and including the end marker).
struct SequenceExamples {
  std::int64_t window = 0;
  std::vector<std::int64_t> x, y;
  std::vector<double> weight;
  std::int64_t size() const { return static_cast<std::int64_t>(x.size()) / window; }
};

SequenceExamples sequence_examples(const std::vector<std::string>& names, const Vocabulary& v,
                                   std::int64_t window) {
  SequenceExamples ex{window, {}, {}, {}};
  for (const auto& name : names) {
    const std::string in = "." + name, out = name + ".";
    for (std::int64_t t = 0; t < window; ++t) {
      const bool inside = t < static_cast<std::int64_t>(out.size());
      ex.x.push_back(inside ? v.id(in[static_cast<std::size_t>(t)]) : 0);
      ex.y.push_back(inside ? v.id(out[static_cast<std::size_t>(t)]) : 0);
      ex.weight.push_back(inside ? 1.0 : 0.0);
    }
  }
  return ex;
}


/// Host NLL per counted character on each of `sets`, from one forward routine.
std::vector<double> evaluate_sequences(runtime::Context& ctx, const nn::DecoderLm& model,
                                       const std::vector<SequenceExamples>& sets) {
  std::vector<Tensor> logits;
  for (std::size_t i = 0; i < sets.size(); ++i)
    logits.push_back(model.logits(nn::ids_literal("tf_eval" + std::to_string(i), sets[i].x,
                                                  {sets[i].size(), sets[i].window})));
  auto routine = train::compile_forward(ctx, logits, "tf_eval");
  ctx.run(routine);
  std::vector<double> losses;
  for (std::size_t i = 0; i < sets.size(); ++i)
    losses.push_back(examples::mean_nll(ctx.get_values(logits[i].value()), sets[i].y,
                                        static_cast<std::size_t>(model.options.vocab), sets[i].weight));
  return losses;
}

std::vector<std::string> sample_transformer(runtime::Context& ctx, const nn::DecoderLm& model,
                                            const Vocabulary& v) {
  Tensor ids = nn::ids_literal("tf_sample",
                               std::vector<std::int64_t>(static_cast<std::size_t>(model.options.window), 0),
                               {1, model.options.window});
  Tensor logits = model.logits(ids);
  auto routine = train::compile_forward(ctx, {logits}, "tf_sample");
  return sample_names(v, 5, 1, [&](const std::string& name) {
    std::vector<double> padded(static_cast<std::size_t>(model.options.window), 0.0);
    const auto n = std::min<std::size_t>(name.size(), padded.size() - 1);
    for (std::size_t i = 0; i < n; ++i) padded[i + 1] = static_cast<double>(v.id(name[i]));
    ctx.set_values(ids.value(), padded);
    ctx.run(routine);
    const std::vector<double> all = ctx.get_values(logits.value());
    const auto row = static_cast<std::ptrdiff_t>(n) * model.options.vocab;
    return std::vector<double>(all.begin() + row, all.begin() + row + model.options.vocab);
  });
}

ModelReport train_transformer(const Split& split, const Vocabulary& v, std::int64_t window,
                              const TrainSettings& s) {
  nn::DecoderLm model("tf_",
                      {.vocab = v.size(), .window = window, .d_model = 32, .layers = 2, .heads = 4});
  const auto all = sequence_examples(split.train, v, window);
  const std::int64_t n_batches = std::min(s.max_batches, all.size() / s.batch_size);
  const auto n = static_cast<std::size_t>(n_batches * s.batch_size * window);
  const std::vector<std::int64_t> dims{n_batches, s.batch_size, window};
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "tf_batch"};
  auto sliced = [&](Tensor t) { return slice_batch(t, batch); };
  Tensor x = sliced(nn::ids_literal(
      "tf_x", {all.x.begin(), all.x.begin() + static_cast<std::ptrdiff_t>(n)}, dims));
  Tensor y = sliced(nn::ids_literal(
      "tf_y", {all.y.begin(), all.y.begin() + static_cast<std::ptrdiff_t>(n)}, dims));
  Tensor w = sliced(
      literal("tf_w", {all.weight.begin(), all.weight.begin() + static_cast<std::ptrdiff_t>(n)},
              {.batch = dims}));
  double counted = 0;
  for (std::size_t i = 0; i < n; ++i) counted += all.weight[i];
  Tensor loss =
      nn::cross_entropy_loss(model.logits(x), nn::one_hot_of_ids(y, v.size()),
                             {.mask = w, .normalize_by = counted / static_cast<double>(n_batches)});
  auto step = train::compile_step(runtime::Context::cpu(), loss,
                                  step_options(s, batch, n_batches, "transformer"));
  train::fit(step, {.epochs = s.epochs, .on_epoch = [&](const train::EpochReport& e) {
                      std::printf("  transformer epoch %d/%d: train loss %.4f (%.0f steps/s)\n",
                                  e.epoch, e.epochs, e.mean_loss, e.steps_per_second);
                    }});
  const auto losses = evaluate_sequences(
      step.ctx, model,
      {all, sequence_examples(split.dev, v, window), sequence_examples(split.test, v, window)});
  ModelReport r{"transformer", losses[0], losses[1], losses[2], {}};
  r.samples = sample_transformer(step.ctx, model, v);
  return r;
}

std::int64_t longest(const std::vector<std::string>& names) {
  std::size_t n = 0;
  for (const auto& s : names) n = std::max(n, s.size());
  return static_cast<std::int64_t>(n);
}

int run(const examples::ExampleArgs& args) {
  if (args.quick) examples::use_quick_compile_settings();
  const auto names = load_names(args.data_dir);
  const Vocabulary v = make_vocabulary(names);
  const Split split = split_names(names);
  std::printf("%zu names, vocabulary of %lld ('%s'), split %zu/%zu/%zu%s\n", names.size(),
              static_cast<long long>(v.size()), v.chars.c_str(), split.train.size(),
              split.dev.size(), split.test.size(), args.quick ? " (quick run)" : "");
  std::fflush(stdout);
  const std::int64_t cap = args.quick ? 40 : 1 << 30;
  // One or two short epochs per model in the quick form; --epochs N sets every model's.
  auto epochs = [&](int quick, int full) {
    return args.epochs > 0 ? args.epochs : args.quick ? quick : full;
  };

  std::vector<ModelReport> reports;
  reports.push_back(bigram_counts(split, v));
  print_report(reports.back());
  reports.push_back(train_context_model(
      bigram_net(v.size()), split, v,
      {.epochs = epochs(1, 10), .batch_size = 256, .max_batches = cap, .lr = 0.1}));
  print_report(reports.back());
  reports.push_back(train_context_model(mlp(v.size(), 3, 10, 200), split, v,
                                        {.epochs = epochs(2, 20),
                                         .batch_size = 64,
                                         .max_batches = cap,
                                         .lr = 1e-2,
                                         .weight_decay = 0.05}));
  const ModelReport mlp_report = reports.back();
  print_report(reports.back());
  reports.push_back(train_context_model(mlp_batch_norm(v.size(), 3, 10, 200), split, v,
                                        {.epochs = epochs(2, 20),
                                         .batch_size = 64,
                                         .max_batches = cap,
                                         .lr = 1e-2,
                                         .weight_decay = 0.05}));
  print_report(reports.back());
  reports.push_back(train_transformer(split, v, longest(names) + 1,
                                      {.epochs = epochs(1, 15),
                                       .batch_size = 32,
                                       .max_batches = cap,
                                       .lr = 3e-3,
                                       .weight_decay = 0.01}));
  print_report(reports.back());

  const double uniform = std::log(static_cast<double>(v.size()));
  bool learned = true;
  for (const auto& r : reports) learned = learned && std::isfinite(r.dev) && r.dev < uniform;
  const double gain = reports[0].dev - mlp_report.dev;
  std::printf("MLP dev loss %.4f vs bigram dev loss %.4f: lower by %.4f (acceptance: >= 0.1%s)\n",
              mlp_report.dev, reports[0].dev, gain, args.quick ? " in the full run" : "");
  if (args.quick) return learned ? 0 : 1;  // too short to reach the goal; every model must learn
  return learned && gain >= 0.1 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(examples::parse_example_args(config::parse_command_line(argc, argv)));
  } catch (const examples::DataUnavailable& e) {
    std::fprintf(stderr, "makemore: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // cannl's UserError (with its what/where/how) and others
    std::fprintf(stderr, "makemore: %s\n", e.what());
    return 1;
  }
}
