// Position blocks: the relative-position property of RoPE and usage errors (values and
// gradients against PyTorch: parity_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "cannl/cannl.h"
#include "tensor/fresh_tensors.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

class Positions : public testing::Test {
 protected:
  testing_util::FreshTensors fresh_{"f64"};
};

/// The same vector at every one of `seq` positions: batch [seq], output [d].
Tensor repeated(const std::string& name, const std::vector<double>& v, std::int64_t seq) {
  std::vector<double> values;
  for (std::int64_t s = 0; s < seq; ++s) values.insert(values.end(), v.begin(), v.end());
  return literal(name, values, {.batch = Dims{seq}, .output = Dims{static_cast<std::int64_t>(v.size())}});
}

TEST_F(Positions, RopeScoresDependOnlyOnTheRelativePosition) {
  // <rope(q)_s, rope(k)_t> is a function of s - t: rotations by angles s theta and t theta.
  const std::int64_t seq = 5, d = 6;
  const nn::RopeOptions o{.seq_len = seq, .head_dim = d};
  Tensor q = nn::rope(repeated("q", {0.3, -1, 2, 0.5, 1.5, -0.7}, seq), o);
  Tensor k = nn::rope(repeated("k", {1, 0.2, -0.4, 2, -1, 0.9}, seq), o);
  Tensor scores = einsum("s|->d; t|->d => s|t->", q, k);
  auto ctx = runtime::Context::interpreter();
  auto forward = train::compile_forward(ctx, {scores}, "rope_scores");
  ctx.run(forward);
  const auto got = ctx.get_values(scores.value());  // [s, t]
  for (std::int64_t s = 1; s < seq; ++s)
    for (std::int64_t t = 1; t < seq; ++t)
      EXPECT_NEAR(got[s * seq + t], got[(s - 1) * seq + (t - 1)], 1e-12) << "s " << s << " t " << t;
  // And it is not constant: different offsets give different scores.
  EXPECT_GT(std::abs(got[0 * seq + 1] - got[1 * seq + 0]), 1e-3);
}

TEST_F(Positions, RejectsBadSizes) {
  Tensor x = param("x", {.input = Dims{}, .output = Dims{5}});
  try {
    nn::rope(x, {.seq_len = 4, .head_dim = 5});
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("an even head_dim > 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nn::sinusoidal_positions(0, 8), RuntimeUsageError);
  nn::LearnedPositions wpe("wpe", 4, 8);
  try {
    wpe(5);
    FAIL() << "expected RuntimeUsageError";
  } catch (const RuntimeUsageError& e) {
    EXPECT_NE(std::string(e.what()).find("need 0 < seq_len <= max_len"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cannl
