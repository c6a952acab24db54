// `cannl demo --model makemore`: the makemore MLP (as in examples/02_makemore.cpp: embeddings of
// the previous 3 characters -> tanh hidden layer -> logits over the alphabet) trained with AdamW,
// on one device or data-parallel (demo_training.h). Small enough for the distributed tests.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cannl/support/error.h"
#include "demo_training.h"

namespace cannl::app {
namespace {

constexpr std::int64_t kContext = 3;
constexpr std::int64_t kEmbedding = 10;
constexpr std::int64_t kHidden = 64;
constexpr std::int64_t kGlobalBatch = 64;
constexpr std::int64_t kGlobalSteps = 48;  // per epoch

struct Examples {
  std::vector<std::int64_t> contexts;  // kContext ids per example
  std::vector<std::int64_t> targets;
  std::int64_t vocab = 0;
};

std::vector<std::string> read_names(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw IoError("cannot read the names file '" + path + "'; run from the project root or give --data FILE");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    std::string name;
    for (char c : line)
      if (c >= 'a' && c <= 'z') name += c; else if (c >= 'A' && c <= 'Z') name += static_cast<char>(c - 'A' + 'a');
    if (!name.empty()) names.push_back(name);
  }
  if (names.empty()) throw FormatError("the names file '" + path + "' holds no names");
  return names;
}

/// Every (3 previous characters -> next) pair of the names, '.' (id 0) padding and ending each,
/// in a fixed pseudo-random order (a linear congruential shuffle: the same on every machine).
Examples examples_of(const std::vector<std::string>& names, std::size_t count) {
  Examples ex;
  ex.vocab = 27;
  std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> pairs;
  for (const auto& name : names) {
    std::vector<std::int64_t> window(kContext, 0);
    for (std::size_t i = 0; i <= name.size(); ++i) {
      const std::int64_t next = i < name.size() ? name[i] - 'a' + 1 : 0;
      pairs.emplace_back(window, next);
      window.erase(window.begin());
      window.push_back(next);
    }
  }
  std::uint64_t state = 12345;
  for (std::size_t i = pairs.size(); i > 1; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(pairs[i - 1], pairs[(state >> 33) % i]);
  }
  if (pairs.size() < count) throw FormatError("the names file holds too few examples for the demo");
  for (std::size_t k = 0; k < count; ++k) {
    ex.contexts.insert(ex.contexts.end(), pairs[k].first.begin(), pairs[k].first.end());
    ex.targets.push_back(pairs[k].second);
  }
  return ex;
}

}  // namespace

int run_makemore_demo(const DemoOptions& options) {
  const DemoTraining training = demo_training(options);
  return run_distributed_safely(training, [&] {
    const std::int64_t micro = training.micro_batch(kGlobalBatch);
    const std::int64_t n_batches = kGlobalSteps * training.replicas();
    const Examples ex = examples_of(read_names(options.data), static_cast<std::size_t>(kGlobalBatch * kGlobalSteps));
    ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
    Tensor x = nn::ids_literal("names_x", ex.contexts, {n_batches, micro, kContext});
    Tensor y = nn::ids_literal("names_y", ex.targets, {n_batches, micro});
    Tensor table = param("mlp_emb", {.input = nn::Dims{ex.vocab}, .output = nn::Dims{kEmbedding},
                                     .init = {.kind = InitKind::Normal, .stddev = 1.0}});
    nn::Linear fc1("mlp_fc1", {kHidden}), fc2("mlp_fc2", {ex.vocab});
    Tensor embedded = einsum("...c|d => ...|cd", table * nn::one_hot_of_ids(slice_batch(x, batch), ex.vocab));
    Tensor loss = nn::cross_entropy_loss(fc2(tanh(fc1(embedded))), nn::one_hot_of_ids(slice_batch(y, batch), ex.vocab));
    if (training.is_rank0())
      std::printf("cannl demo --model makemore: MLP (3 x %lld embeddings -> tanh %lld -> %lld) on %lld examples, %s, "
                  "AdamW lr 0.01\n",
                  static_cast<long long>(kEmbedding), static_cast<long long>(kHidden), static_cast<long long>(ex.vocab),
                  static_cast<long long>(kGlobalBatch * kGlobalSteps), training.describe(kGlobalBatch).c_str());
    auto step = training.compile(loss, {.optimizer = train::Optimizer::AdamW,
                                        .adam = {.schedule = {.lr = 0.01}},
                                        .batch = batch,
                                        .n_batches = n_batches,
                                        .name = "makemore_step"});
    const auto losses = training.fit(step, options, [&](const train::EpochReport& r) {
      std::printf("epoch %3d/%d  loss %.6f  %.0f %ssteps/s\n", r.epoch, r.epochs, r.mean_loss, r.steps_per_second,
                  step.parallel ? "global " : "");
      std::fflush(stdout);
    });
    if (training.is_rank0() && !losses.empty()) std::printf("final loss: %.9f\n", losses.back());
    return 0;
  });
}

}  // namespace cannl::app
