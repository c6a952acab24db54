#pragma once
// The finite-difference oracle shared by every gradient test: compile a loss's gradient routine,
// then compare each parameter gradient with central differences of the loss (f64 expected).
//
//   testing_util::expect_gradients_match(ctx, loss, params, "relu on cc");

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"
#include "tensor/compile_util.h"

namespace cannl::testing_util {

/// Deterministic values in [low, high) from a 64-bit LCG seeded by `salt`.
inline std::vector<double> lcg_values(std::int64_t n, double low, double high, unsigned salt) {
  std::vector<double> v;
  std::uint64_t s = 0x9E3779B97F4A7C15ull * (salt + 1);
  for (std::int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v.push_back(low + (high - low) * static_cast<double>(s >> 11) * 0x1.0p-53);
  }
  return v;
}

struct GradientCheck {
  double low = -1, high = 1;        // parameter values are lcg_values in [low, high)
  std::size_t max_cells = 0;        // 0 = every cell; else about this many spread cells per param
  std::int64_t static_value = 0;    // value of every static index (batch slices)
  double tolerance = 1e-6;          // on |numeric - analytic| / max(1, |numeric|, |analytic|)
};

/// Compiles grad_update_code(loss) in `ctx`, fills the params, and expects every checked cell's
/// analytic gradient to match the central difference of the loss.
inline void expect_gradients_match(runtime::Context ctx, const Tensor& loss,
                                   const std::vector<Tensor>& params, const std::string& what,
                                   const GradientCheck& check = {}) {
  auto routine = ctx.compile(grad_update_code(loss), "grad_" + what);  // name sanitized by compile
  testing_util::upload_literals(ctx, {loss});
  const std::vector<std::int64_t> statics(routine.statics().size(), check.static_value);
  auto loss_value = [&] {
    ctx.run(routine, statics);
    return ctx.get_values(loss.value()).at(0);
  };
  for (std::size_t k = 0; k < params.size(); ++k)
    ctx.set_values(params[k].value(), lcg_values(params[k].value()->num_logical_elements(),
                                                 check.low, check.high, static_cast<unsigned>(k)));
  loss_value();
  // Every analytic gradient is read before a perturbed run overwrites it.
  std::vector<std::vector<double>> analytic;
  for (const auto& p : params) analytic.push_back(ctx.get_values(p.grad()));
  for (std::size_t k = 0; k < params.size(); ++k) {
    auto x = ctx.get_values(params[k].value());
    const std::size_t stride = check.max_cells == 0 ? 1 : std::max<std::size_t>(1, x.size() / check.max_cells);
    for (std::size_t i = k % stride; i < x.size(); i += stride) {
      const double h = 1e-5 * std::max(1.0, std::abs(x[i])), saved = x[i];
      x[i] = saved + h;
      ctx.set_values(params[k].value(), x);
      const double up = loss_value();
      x[i] = saved - h;
      ctx.set_values(params[k].value(), x);
      const double down = loss_value();
      x[i] = saved;
      ctx.set_values(params[k].value(), x);
      const double numeric = (up - down) / (2 * h);
      const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[k][i])});
      EXPECT_LT(std::abs(numeric - analytic[k][i]) / scale, check.tolerance)
          << what << ": d loss / d " << params[k].label() << "[" << i << "] analytic "
          << analytic[k][i] << " numeric " << numeric;
    }
  }
}

}  // namespace cannl::testing_util
