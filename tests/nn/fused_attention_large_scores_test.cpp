// nn::fused_attention at very large scores (3e4): the output and the gradients of q, k and v must
// keep f32 precision against an f64 oracle computed here. Adding B to every score of a row
// changes no probability; a log-sum-exp stored as one f32 (max + log(sum)) rounds to an ulp of B
// (2^-9 at 3e4), so the probabilities the backward recomputes from it are off by up to 1e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "block_test_util.h"
#include "cannl/cannl.h"
#include "cannl/nn/ops.h"

namespace cannl {
namespace {

using testing_util::batch_input;
using Dims = std::vector<std::int64_t>;
using Matrix = std::vector<std::vector<double>>;  // [row][feature]

// Three queries and three keys of two features, values of two features. Every score
// q_s . k_t = B + a_s c_t is exact in f32 (the products are multiples of 1/4, |score| < 2^15).
constexpr std::size_t kRows = 3;
const std::vector<double> kA = {0.5, -1.0, 1.5};
const std::vector<double> kC = {1.0, -0.5, 2.0};
const Matrix kV = {{0.75, -1.25}, {-0.5, 2.0}, {1.5, 0.25}};
const Matrix kW = {{1.0, -0.75}, {0.5, 1.25}, {-1.5, 0.25}};  // dO: the loss is sum(out * w)

Matrix queries(double b) { return {{b, kA[0]}, {b, kA[1]}, {b, kA[2]}}; }
Matrix keys() { return {{1.0, kC[0]}, {1.0, kC[1]}, {1.0, kC[2]}}; }

/// Values and the sums of their terms' magnitudes (the scale of their rounding errors).
struct Oracle {
  Matrix out, dq, dk, dv;
  Matrix out_size, dq_size, dk_size, dv_size;
};

Matrix zeros() { return Matrix(kRows, std::vector<double>(2, 0.0)); }

/// Softmax attention and its gradients in f64 (the FlashAttention-2 formulas, scale 1).
Oracle oracle(double b) {
  const Matrix q = queries(b), k = keys();
  Oracle o{zeros(), zeros(), zeros(), zeros(), zeros(), zeros(), zeros(), zeros()};
  for (std::size_t s = 0; s < kRows; ++s) {
    double l = 0, dp[kRows], p[kRows], delta = 0, delta_size = 0;
    for (std::size_t t = 0; t < kRows; ++t) l += std::exp(kA[s] * kC[t]);  // B cancels exactly
    for (std::size_t t = 0; t < kRows; ++t) {
      p[t] = std::exp(kA[s] * kC[t]) / l;
      dp[t] = kW[s][0] * kV[t][0] + kW[s][1] * kV[t][1];
      delta += p[t] * dp[t];
      delta_size += p[t] * std::abs(dp[t]);
    }
    for (std::size_t t = 0; t < kRows; ++t) {
      const double ds = p[t] * (dp[t] - delta), ds_size = p[t] * (std::abs(dp[t]) + delta_size);
      for (std::size_t j = 0; j < 2; ++j) {
        o.out[s][j] += p[t] * kV[t][j];
        o.out_size[s][j] += p[t] * std::abs(kV[t][j]);
        o.dv[t][j] += p[t] * kW[s][j];
        o.dv_size[t][j] += p[t] * std::abs(kW[s][j]);
        o.dq[s][j] += ds * k[t][j];
        o.dq_size[s][j] += ds_size * std::abs(k[t][j]);
        o.dk[t][j] += ds * q[s][j];
        o.dk_size[t][j] += ds_size * std::abs(q[s][j]);
      }
    }
  }
  return o;
}

/// A batch_input parameter's memory order: [feature][row].
std::vector<double> feature_major(const Matrix& m) {
  std::vector<double> out;
  for (std::size_t j = 0; j < 2; ++j)
    for (std::size_t r = 0; r < kRows; ++r) out.push_back(m[r][j]);
  return out;
}

struct Computed {
  std::vector<double> out, dq, dk, dv;  // out row-major [s][e]; gradients feature-major
};

Computed fused_run(runtime::Context ctx, double b) {
  reset_tensor_state();
  std::vector<Tensor> inputs;
  const Dims rows{1, static_cast<std::int64_t>(kRows)};
  Tensor q = batch_input(inputs, "q", rows, {1, 2});
  Tensor k = batch_input(inputs, "k", rows, {1, 2});
  Tensor v = batch_input(inputs, "v", rows, {1, 2});
  Tensor out = nn::fused_attention(q, k, v, {.causal = false, .scale = 1.0});
  std::vector<double> w;
  for (const auto& row : kW) w.insert(w.end(), row.begin(), row.end());
  Tensor loss = sum(pointmul(out, literal("w", w, {.batch = rows, .input = Dims{}, .output = Dims{1, 2}})));
  auto routine = ctx.compile(grad_update_code(loss), "fused_attention_grad");
  train::upload_literals(ctx, {loss});
  ctx.set_values(inputs[0].value(), feature_major(queries(b)));
  ctx.set_values(inputs[1].value(), feature_major(keys()));
  ctx.set_values(inputs[2].value(), feature_major(kV));
  ctx.run(routine);
  return {ctx.get_values(out.value()), ctx.get_values(inputs[0].grad()), ctx.get_values(inputs[1].grad()),
          ctx.get_values(inputs[2].grad())};
}

/// Each cell within 16 f32 ulps of the magnitude of its terms (a few roundings each of exp, the
/// dot products and the sums over three rows).
void expect_near_oracle(const std::vector<double>& got, const Matrix& want, const Matrix& size, bool feature_major_order,
                        const std::string& what) {
  ASSERT_EQ(got.size(), kRows * 2) << what;
  for (std::size_t r = 0; r < kRows; ++r)
    for (std::size_t j = 0; j < 2; ++j) {
      const double cell = got[feature_major_order ? j * kRows + r : r * 2 + j];
      EXPECT_NEAR(cell, want[r][j], 16 * 0x1p-24 * size[r][j]) << what << " [" << r << "][" << j << "]";
    }
}

TEST(FusedAttentionLargeScores, GradientsKeepF32PrecisionAtScoresOf3e4) {
  for (const double b : {0.0, 1000.0, 30000.0}) {
    const Oracle want = oracle(b);
    for (const bool compiled : {false, true}) {
      const Computed got = fused_run(compiled ? runtime::Context::cpu() : runtime::Context::interpreter(), b);
      const std::string what = "B = " + std::to_string(b) + (compiled ? " (C backend)" : " (interpreter)");
      expect_near_oracle(got.out, want.out, want.out_size, false, what + ": out");
      expect_near_oracle(got.dq, want.dq, want.dq_size, true, what + ": dq");
      expect_near_oracle(got.dk, want.dk, want.dk_size, true, what + ": dk");
      expect_near_oracle(got.dv, want.dv, want.dv_size, true, what + ": dv");
    }
  }
}

}  // namespace
}  // namespace cannl
