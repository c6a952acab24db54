// Dynamic loss scaling (include/cannl/nn/loss_scaling.h).
#include "cannl/nn/loss_scaling.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "nn/update_util.h"

namespace cannl::nn {
namespace {

using detail::ap;
using detail::arg;
using detail::lit;
using ir::Op;

/// S as the step's f32 literal holds it.
double as_f32(double scale) { return static_cast<double>(static_cast<float>(scale)); }

std::string as_text(double v) {  // 9 digits: enough to tell f32 values apart
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// S is an f32 literal: a double beyond f32's range would become inf (every step skipped, and
/// backoff cannot bring inf back) or 0 (every gradient a NaN of 0 / 0).
void validate_scale(double scale, const std::string& what) {
  const double s = as_f32(scale);
  if (std::isfinite(scale) && scale > 0 && std::isfinite(s) && s > 0) return;
  throw RuntimeUsageError("loss scaling: " + what + " = " + as_text(scale) +
                          " is not a positive finite f32 (the scale is an f32 value, at most " +
                          as_text(std::numeric_limits<float>::max()) + " and at least " +
                          as_text(std::numeric_limits<float>::denorm_min()) + "); the default is 65536");
}

void validate(const LossScaleOptions& o) {
  validate_scale(o.init_scale, "init_scale");
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!positive(o.growth_factor) || o.growth_factor < 1 ||
      !positive(o.backoff_factor) || o.backoff_factor >= 1 || o.growth_interval < 1)
    throw RuntimeUsageError(
        "loss scaling: growth_factor must be >= 1, backoff_factor in (0, 1) and growth_interval >= 1 "
        "(growth_factor=" + std::to_string(o.growth_factor) + ", backoff_factor=" +
        std::to_string(o.backoff_factor) + ", growth_interval=" + std::to_string(o.growth_interval) + ")");
}

}  // namespace

LossScaler::LossScaler(const Tensor& loss, const LossScaleOptions& options) : options_(options) {
  validate(options);
  using Dims = std::vector<std::int64_t>;
  scale_ = literal("loss_scale", {options.init_scale},
                   {.batch = Dims{}, .input = Dims{}, .output = Dims{1}, .dtype = ir::DType::F32});
  scaled_ = pointmul(loss, scale_);
  nonfinite_ = detail::state_buffer("grads_nonfinite", ir::DType::F32, {1}, 64);
  state_.scale = as_f32(options.init_scale);
}

std::vector<ir::AsgnRef> LossScaler::unscale_and_check(const std::vector<Tensor>& params) const {
  resolve_shapes({scaled_});
  std::vector<ir::AsgnRef> code;
  // Division by S, a power of two with the default factors, is exact (unless a gradient is
  // subnormal after it); a multiplication by a rounded 1/S would not be for other S.
  for (const auto& p : params)
    code.push_back(detail::elementwise(p.grad(), Op::Arg2, {p.grad(), scale_.value()},
                                       ap(Op::Div, {arg(0), arg(1)})));
  code.push_back(ir::make_fetch(nonfinite_, ir::FetchConstant{0}));
  for (const auto& p : params)
    code.push_back(detail::reduce_to_scalar(nonfinite_, {p.grad()}, ap(Op::Mul, {arg(0), lit(0)})));
  return code;
}

bool LossScaler::after_gradients(runtime::Context& ctx) {
  const bool finite = std::isfinite(ctx.get_values(nonfinite_).at(0));
  ++state_.steps;
  state_.last_step_skipped = !finite;
  if (!finite) {
    ++state_.skipped_steps;
    state_.good_streak = 0;
    set_scale(ctx, state_.scale * options_.backoff_factor);
    return false;
  }
  if (++state_.good_streak >= options_.growth_interval) {
    state_.good_streak = 0;
    set_scale(ctx, state_.scale * options_.growth_factor);
  }
  return true;
}

void LossScaler::restore(runtime::Context& ctx, const LossScaleState& state) {
  validate_scale(state.scale, "a restored scale");
  state_ = state;
  state_.scale = as_f32(state.scale);
  ctx.set_values(scale_.value(), std::vector<double>{state_.scale});
}

void LossScaler::set_scale(runtime::Context& ctx, double scale) {
  // An f32 S: beyond its range the scale stays where it is (growth cannot make it infinite).
  if (!std::isfinite(as_f32(scale)) || as_f32(scale) == 0) return;
  state_.scale = as_f32(scale);
  ctx.set_values(scale_.value(), std::vector<double>{state_.scale});
}

}  // namespace cannl::nn
