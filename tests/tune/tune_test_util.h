#pragma once
// The tuner tests' program (tests/tune, and tests/gpu on a GPU backend): y = w * x, an n x n x n
// f32 matmul of literals (a tile on the cc backend, a blocked tile on a GPU).
//
//   tune_test::Matmul m = tune_test::matmul(48);  train::upload_literals(ctx, {m.y});

#include <random>
#include <vector>

#include "cannl/cannl.h"

namespace cannl::tune_test {

inline std::vector<double> gaussian(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

struct Matmul {
  Tensor y;
  ir::Comp comp;
};

inline Matmul matmul(std::int64_t n) {
  using Dims = std::vector<std::int64_t>;
  const auto size = static_cast<std::size_t>(n * n);
  Tensor x = literal("x", gaussian(size, 1), {.batch = Dims{n}, .output = Dims{n}});
  Tensor w = literal("w", gaussian(size, 2), {.input = Dims{n}, .output = Dims{n}});
  Tensor y = w * x;
  return {y, forward_code({y})};
}

}  // namespace cannl::tune_test
