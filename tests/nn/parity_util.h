#pragma once
// Loader of the PyTorch parity fixtures written by scripts/make_parity_fixtures.py (safetensors
// files of float64 tensors, PyTorch's layout; see the script), and the error measure the parity
// tests use.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cannl/io/safetensors.h"

namespace cannl::testing_util {

struct FixtureTensor {
  std::vector<std::int64_t> dims;  // empty for a scalar
  std::vector<double> values;      // row-major
};
using Fixture = std::map<std::string, FixtureTensor>;

/// Reads every tensor of tests/parity/<name>.safetensors. Throws IoError / FormatError (from the
/// io layer) for a missing or malformed file.
///   Fixture f = load_fixture("layer_norm");  f.at("out").values.size() == 30
inline Fixture load_fixture(const std::string& name) {
  const std::string path = std::string(CANNL_SOURCE_DIR) + "/tests/parity/" + name + ".safetensors";
  const auto file = io::SafetensorsFile::open(path);
  Fixture fixture;
  for (const io::TensorInfo& t : file.tensors()) fixture[t.name] = {t.shape, file.to_f64(t.name)};
  return fixture;
}

/// Row-major [rows, cols] -> [cols, rows].
inline std::vector<double> transposed(const std::vector<double>& v, std::int64_t rows) {
  const std::int64_t cols = static_cast<std::int64_t>(v.size()) / rows;
  std::vector<double> out(v.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(c * rows + r)] = v[static_cast<std::size_t>(r * cols + c)];
  return out;
}

/// The parity error measure: max_i |got_i - want_i| / max(|want_i|, floor) with the absolute
/// floor = kParityFloor * max(1, max_j |want_j|). Elements far below the tensor's scale (where
/// f32 cancellation dominates) are thus measured against a fraction of the scale, not against
/// their own tiny magnitude.
inline constexpr double kParityFloor = 0.05;
inline double max_relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::abs(w));
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), kParityFloor * scale));
  return worst;
}

}  // namespace cannl::testing_util
