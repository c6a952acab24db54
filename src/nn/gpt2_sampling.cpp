// Choosing the next token (greedy, or top-k sampling with temperature) and the generation loop.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cannl/nn/gpt2.h"
#include "cannl/support/error.h"

namespace cannl::nn {
namespace {

/// splitmix64: a fixed, portable 64-bit generator (the same stream on every platform).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::int64_t argmax(std::span<const double> logits) {
  // max_element keeps the first of equal maxima: ties go to the lowest id.
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

}  // namespace

TokenSampler::TokenSampler(const SamplingOptions& options) : options_(options), state_(options.seed) {
  if (options.greedy) return;
  if (!(options.temperature > 0) || !std::isfinite(options.temperature))
    throw RuntimeUsageError("sampling: temperature must be > 0, got " +
                            std::to_string(options.temperature));
  if (options.top_k < 0)
    throw RuntimeUsageError("sampling: top_k must be >= 0, got " + std::to_string(options.top_k));
}

double TokenSampler::uniform() {
  return static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53;  // [0, 1), 53 bits
}

std::int64_t TokenSampler::next(std::span<const double> logits) {
  if (logits.empty()) throw RuntimeUsageError("sampling: no logits");
  if (options_.greedy) return argmax(logits);
  std::vector<std::int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const auto n = static_cast<std::int64_t>(logits.size());
  const std::int64_t k = options_.top_k == 0 ? n : std::min(options_.top_k, n);
  // Largest first, ties by lower id, so the candidate set is fully determined.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](auto a, auto b) {
    const double la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
    return la != lb ? la > lb : a < b;
  });
  const double top = logits[static_cast<std::size_t>(order[0])];
  std::vector<double> weights(static_cast<std::size_t>(k));
  double total = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    const double l = logits[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
    total += weights[static_cast<std::size_t>(i)] = std::exp((l - top) / options_.temperature);
  }
  double pick = uniform() * total;
  for (std::int64_t i = 0; i < k; ++i) {
    pick -= weights[static_cast<std::size_t>(i)];
    if (pick < 0) return order[static_cast<std::size_t>(i)];
  }
  return order[static_cast<std::size_t>(k - 1)];  // rounding left a sliver past the end
}

std::vector<std::int64_t> generate(Gpt2& model, std::vector<std::int64_t> prompt,
                                   std::int64_t n_tokens, const SamplingOptions& options) {
  if (prompt.empty()) throw RuntimeUsageError("gpt2 generate: the prompt is empty");
  TokenSampler sampler(options);
  const auto n = static_cast<std::int64_t>(prompt.size());
  // A new token needs a free position after the sequence so far: at most window - n of them.
  const std::int64_t count = std::min(n_tokens, model.window() - n);
  std::vector<std::int64_t> added;
  if (count <= 0) return added;
  std::vector<double> next;
  for (std::int64_t p = 0; p < n; ++p) next = model.step(prompt[static_cast<std::size_t>(p)], p);
  for (std::int64_t i = 0; i < count; ++i) {
    added.push_back(sampler.next(next));
    if (i + 1 < count) next = model.step(added.back(), n + i);
  }
  return added;
}

}  // namespace cannl::nn
