// Sinusoidal, learned and rotary positions (include/cannl/nn/positions.h).
#include "cannl/nn/positions.h"

#include <cmath>

#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/support/error.h"

namespace cannl::nn {
namespace {

/// angle(p, i) = p * base^(-2i / d), the rotation of frequency pair i at position p.
double angle(std::int64_t position, std::int64_t i, std::int64_t d, double base) {
  return static_cast<double>(position) *
         std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
}

/// A host table batch [seq_len], output [d] of f(position, feature).
template <typename F>
Tensor position_table(const std::string& name, std::int64_t seq_len, std::int64_t d, F f) {
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(seq_len * d));
  for (std::int64_t p = 0; p < seq_len; ++p)
    for (std::int64_t j = 0; j < d; ++j) values.push_back(f(p, j));
  return literal(name, std::move(values),
                 {.batch = Dims{seq_len}, .input = Dims{}, .output = Dims{d}});
}

/// rotate_half as a matrix [d <- d]: out[j] = -x[j + d/2] for j < d/2, x[j - d/2] otherwise.
Tensor rotate_half_matrix(std::int64_t d) {
  const std::int64_t half = d / 2;
  std::vector<double> m(static_cast<std::size_t>(d * d), 0.0);
  for (std::int64_t j = 0; j < half; ++j) {
    m[static_cast<std::size_t>(j * d + j + half)] = -1;
    m[static_cast<std::size_t>((j + half) * d + j)] = 1;
  }
  return literal("rope_rotate_half_" + std::to_string(d), std::move(m),
                 {.batch = Dims{}, .input = Dims{d}, .output = Dims{d}});
}

}  // namespace

Tensor sinusoidal_positions(std::int64_t seq_len, std::int64_t d_model) {
  if (seq_len <= 0 || d_model <= 0)
    throw RuntimeUsageError("sinusoidal_positions: seq_len and d_model must be > 0, got " +
                            std::to_string(seq_len) + " and " + std::to_string(d_model));
  return position_table("sinusoidal_" + std::to_string(seq_len) + "x" + std::to_string(d_model),
                        seq_len, d_model, [d_model](std::int64_t p, std::int64_t j) {
                          const double a = angle(p, j / 2, d_model, 10000.0);
                          return j % 2 == 0 ? std::sin(a) : std::cos(a);
                        });
}

LearnedPositions::LearnedPositions(const std::string& label, std::int64_t max_len, std::int64_t dim)
    : table(Embedding(label, max_len, dim).table), max_len(max_len) {}

Tensor LearnedPositions::operator()(std::int64_t seq_len) const {
  PrecisionScope exact(PrecisionPolicy{});  // a lookup (Embedding::operator())
  return table * position_one_hot(seq_len, max_len);
}

Tensor rope(const Tensor& x, const RopeOptions& o) {
  const std::int64_t d = o.head_dim;
  if (o.seq_len <= 0 || d <= 0 || d % 2 != 0 || !(o.base > 0))
    throw RuntimeUsageError("rope: need seq_len > 0, an even head_dim > 0 and base > 0, got seq_len " +
                            std::to_string(o.seq_len) + ", head_dim " + std::to_string(d) +
                            ", base " + std::to_string(o.base));
  const std::string suffix = std::to_string(o.seq_len) + "x" + std::to_string(d);
  auto table = [&](const char* name, double (*f)(double)) {
    return position_table(std::string("rope_") + name + "_" + suffix, o.seq_len, d,
                          [&](std::int64_t p, std::int64_t j) { return f(angle(p, j % (d / 2), d, o.base)); });
  };
  Tensor cos_table = table("cos", [](double a) { return std::cos(a); });
  Tensor sin_table = table("sin", [](double a) { return std::sin(a); });
  Tensor rotated = einsum("...|->...e; |e->d => ...|->...d", x, rotate_half_matrix(d));
  return pointmul(x, cos_table) + pointmul(rotated, sin_table);
}

}  // namespace cannl::nn
