#pragma once
// Seeded synthetic datasets.
//
//   auto data = datasets::moons({.samples = 1024, .seed = 42});
//   data.features.size() == 2048;  data.labels[k] is 0 or 1

#include <cstdint>
#include <vector>

namespace cannl::datasets {

struct Dataset {
  std::int64_t samples = 0;
  std::int64_t num_features = 0;
  std::int64_t num_classes = 0;
  std::vector<double> features;  // samples x num_features, row-major
  std::vector<int> labels;       // class id per sample
  /// One-hot labels, samples x num_classes.
  std::vector<double> one_hot() const;
};

struct MoonsOptions {
  std::int64_t samples = 1024;
  double noise = 0.1;
  std::uint64_t seed = 42;
};
/// Two interleaving half circles (class 0 upper, class 1 lower) with Gaussian noise, shuffled.
Dataset moons(const MoonsOptions& options = {});

struct CirclesOptions {
  std::int64_t samples = 1024;
  double noise = 0.05;
  double factor = 0.5;  // inner radius / outer radius
  std::uint64_t seed = 42;
};
/// Two concentric circles (class 0 outer, class 1 inner) with Gaussian noise, shuffled.
Dataset circles(const CirclesOptions& options = {});

}  // namespace cannl::datasets
