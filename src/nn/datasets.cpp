#include "cannl/nn/datasets.h"

#include <cmath>
#include <numbers>
#include <random>

#include "cannl/support/error.h"

namespace cannl::datasets {
namespace {

void check_samples(std::int64_t samples, const char* name) {
  if (samples < 2)
    throw RuntimeUsageError(std::string(name) + ": samples must be at least 2, got " +
                            std::to_string(samples));
}

/// Fisher-Yates over whole samples, so consecutive batches see every part of both classes.
void shuffle_samples(Dataset& d, std::mt19937_64& engine) {
  for (std::int64_t i = d.samples - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(i + 1));
    std::swap(d.labels[static_cast<std::size_t>(i)], d.labels[static_cast<std::size_t>(j)]);
    for (std::int64_t f = 0; f < d.num_features; ++f)
      std::swap(d.features[static_cast<std::size_t>(i * d.num_features + f)],
                d.features[static_cast<std::size_t>(j * d.num_features + f)]);
  }
}

/// Points on a circle-like curve with noise; `point(k, t)` gives the clean point of class k.
template <typename PointFn>
Dataset sample_two_classes(std::int64_t samples, double noise, std::uint64_t seed, PointFn point) {
  // A local engine seeded explicitly: same seed, same data; no global state.
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> jitter(0.0, noise);
  Dataset d;
  d.samples = samples;
  d.num_features = 2;
  d.num_classes = 2;
  const std::int64_t per_class = (samples + 1) / 2;
  for (std::int64_t i = 0; i < samples; ++i) {
    const int label = static_cast<int>(i % 2);
    const double t = std::numbers::pi * static_cast<double>(i / 2) /
                     static_cast<double>(std::max<std::int64_t>(1, per_class - 1));
    auto [x, y] = point(label, t);
    d.features.push_back(x + jitter(engine));
    d.features.push_back(y + jitter(engine));
    d.labels.push_back(label);
  }
  shuffle_samples(d, engine);
  return d;
}

}  // namespace

std::vector<double> Dataset::one_hot() const {
  std::vector<double> result(static_cast<std::size_t>(samples * num_classes), 0.0);
  for (std::int64_t i = 0; i < samples; ++i)
    result[static_cast<std::size_t>(i * num_classes + labels[static_cast<std::size_t>(i)])] = 1.0;
  return result;
}

Dataset moons(const MoonsOptions& o) {
  check_samples(o.samples, "moons");
  return sample_two_classes(o.samples, o.noise, o.seed, [](int label, double t) {
    if (label == 0) return std::pair{std::cos(t), std::sin(t)};
    return std::pair{1.0 - std::cos(t), 0.5 - std::sin(t)};
  });
}

Dataset circles(const CirclesOptions& o) {
  check_samples(o.samples, "circles");
  return sample_two_classes(o.samples, o.noise, o.seed, [&](int label, double t) {
    const double r = label == 0 ? 1.0 : o.factor;
    return std::pair{r * std::cos(2 * t), r * std::sin(2 * t)};
  });
}

}  // namespace cannl::datasets
