#pragma once
// Loader of the PyTorch parity fixtures written by scripts/make_parity_fixtures.py (the text
// format is documented there), and the error measure the parity tests use.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cannl::testing_util {

struct FixtureTensor {
  std::vector<std::int64_t> dims;
  std::vector<double> values;
};
using Fixture = std::map<std::string, FixtureTensor>;

/// Reads tests/parity/<name>.txt. Throws std::runtime_error on a malformed file.
///   Fixture f = load_fixture("layer_norm");  f.at("out").values.size() == 30
inline Fixture load_fixture(const std::string& name) {
  const std::string path = std::string(CANNL_SOURCE_DIR) + "/tests/parity/" + name + ".txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open fixture " + path);
  Fixture fixture;
  std::string header;
  while (std::getline(in, header)) {
    if (header.empty() || header[0] == '#') continue;
    std::istringstream h(header);
    std::string tensor_name;
    int ndim = 0;
    h >> tensor_name >> ndim;
    FixtureTensor t;
    std::int64_t count = 1;
    for (int i = 0; i < ndim; ++i) {
      std::int64_t d = 0;
      h >> d;
      t.dims.push_back(d);
      count *= d;
    }
    std::string line;
    if (!h || !std::getline(in, line)) throw std::runtime_error("truncated fixture " + path);
    std::istringstream v(line);
    double x = 0;
    while (v >> x) t.values.push_back(x);
    if (static_cast<std::int64_t>(t.values.size()) != count)
      throw std::runtime_error("fixture " + path + ": tensor " + tensor_name + " has " +
                               std::to_string(t.values.size()) + " values, expected " +
                               std::to_string(count));
    fixture[tensor_name] = std::move(t);
  }
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
