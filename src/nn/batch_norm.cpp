// BatchNorm1d / BatchNorm2d with running statistics (include/cannl/nn/blocks.h).
#include <cmath>

#include "cannl/nn/blocks.h"
#include "cannl/nn/ops.h"
#include "cannl/support/error.h"

namespace cannl::nn {
namespace {

BatchNormOptions checked(const std::string& label, const BatchNormOptions& o) {
  if (o.num_features <= 0)
    throw RuntimeUsageError("batch_norm '" + label + "': num_features must be > 0, got " +
                            std::to_string(o.num_features));
  if (!(o.eps > 0) || !std::isfinite(o.eps) || !(o.momentum >= 0 && o.momentum <= 1))
    throw RuntimeUsageError("batch_norm '" + label +
                            "': need eps > 0 and momentum in [0, 1], got eps " +
                            std::to_string(o.eps) + ", momentum " + std::to_string(o.momentum));
  return o;
}

Tensor per_feature_param(const std::string& name, std::int64_t n, double value) {
  return param(name, {.input = Dims{}, .output = Dims{n},
                      .init = {.kind = InitKind::Constant, .value = value}});
}

Tensor per_feature_state(const std::string& name, std::int64_t n, double value) {
  return literal(name, std::vector<double>(static_cast<std::size_t>(n), value),
                 {.batch = Dims{}, .input = Dims{}, .output = Dims{n}});
}

}  // namespace

BatchNorm::BatchNorm(const std::string& label, const BatchNormOptions& o, std::string reduce_spec)
    : gamma(per_feature_param(label + "_gamma", checked(label, o).num_features, 1.0)),
      beta(per_feature_param(label + "_beta", o.num_features, 0.0)),
      running_mean(per_feature_state(label + "_running_mean", o.num_features, 0.0)),
      running_var(per_feature_state(label + "_running_var", o.num_features, 1.0)),
      options(o),
      reduce_spec_(std::move(reduce_spec)) {}

Tensor BatchNorm::operator()(const Tensor& x, Mode mode) const {
  Tensor centered, variance;
  if (mode == Mode::Train) {
    Tensor mu = running_average(mean(x, reduce_spec_), running_mean, {.momentum = options.momentum});
    centered = x - mu;
    variance = running_average(mean(pointmul(centered, centered), reduce_spec_), running_var,
                               {.momentum = options.momentum, .unbiased_over = x});
  } else {
    centered = x - running_mean;
    variance = running_var;
  }
  Tensor normalized = centered / sqrt(variance + options.eps);
  if (!options.affine) return normalized;
  return pointmul(gamma, normalized) + beta;
}

BatchNorm1d::BatchNorm1d(const std::string& label, const BatchNormOptions& options)
    : BatchNorm(label, options, "...|...->... => |...->...") {}

BatchNorm2d::BatchNorm2d(const std::string& label, const BatchNormOptions& options)
    : BatchNorm(label, options, "...|...->h, w, c => |...->c") {}

}  // namespace cannl::nn
