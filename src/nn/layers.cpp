// Linear, Mlp, LayerNorm and Embedding blocks.
#include <cmath>

#include "cannl/nn/blocks.h"
#include "cannl/nn/ops.h"
#include "cannl/support/error.h"

namespace cannl::nn {

Linear::Linear(const std::string& label, Dims out_dims, bool bias)
    : w(param(label + "_w", {.output = out_dims, .init = {.kind = InitKind::Kaiming}})) {
  if (bias)
    b = param(label + "_b", {.input = Dims{}, .output = out_dims,
                             .init = {.kind = InitKind::Constant, .value = 0.0}});
}

Tensor Linear::operator()(const Tensor& x) const {
  if (accumulate) {
    Tensor y = w * cast(x, *accumulate);
    return cast(b ? y + *b : y, x.value()->dtype);
  }
  Tensor y = w * x;
  return b ? y + *b : y;
}

namespace {
std::vector<Linear> mlp_layers(const std::string& label, const MlpOptions& o) {
  if (o.out.empty()) throw RuntimeUsageError("mlp '" + label + "': the output dims are empty");
  std::vector<Linear> layers;
  for (std::size_t i = 0; i < o.hidden.size(); ++i)
    layers.emplace_back(label + "_" + std::to_string(i), Dims{o.hidden[i]}, true);
  layers.emplace_back(label + "_out", o.out, o.output_bias);
  return layers;
}
}  // namespace

Mlp::Mlp(const std::string& label, const MlpOptions& options)
    : layers(mlp_layers(label, options)) {}

Tensor Mlp::operator()(const Tensor& x) const {
  Tensor h = x;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) h = relu(layers[i](h));
  return layers.back()(h);
}

LayerNorm::LayerNorm(const std::string& label, const LayerNormOptions& o)
    : gamma(param(label + "_gamma", {.input = Dims{}, .init = {.kind = InitKind::Constant, .value = 1.0}})),
      beta(param(label + "_beta", {.input = Dims{}, .init = {.kind = InitKind::Constant, .value = 0.0}})),
      options(o) {
  if (!(o.eps >= 0) || !std::isfinite(o.eps))
    throw RuntimeUsageError("layer_norm '" + label + "': eps must be finite and >= 0, got " +
                            std::to_string(o.eps));
}

namespace {
Tensor layer_norm(const LayerNorm& ln, const Tensor& x) {
  // A real mean and biased variance (0.8 fix: OCANNL's sum-as-mean is not LayerNorm).
  Tensor centered = x - mean(x, kOverOutputs);
  Tensor variance = mean(pointmul(centered, centered), kOverOutputs);
  Tensor normalized = centered / sqrt(variance + ln.options.eps);
  if (!ln.options.affine) return normalized;
  return pointmul(ln.gamma, normalized) + ln.beta;
}
}  // namespace

Tensor LayerNorm::operator()(const Tensor& x) const {
  if (!options.accumulate) return layer_norm(*this, x);
  return cast(layer_norm(*this, cast(x, *options.accumulate)), x.value()->dtype);
}

Embedding::Embedding(const std::string& label, std::int64_t vocab, std::int64_t dim)
    : table(param(label, {.input = Dims{vocab}, .output = Dims{dim},
                          .init = {.kind = InitKind::Normal, .stddev = 0.02}})) {
  if (vocab <= 0 || dim <= 0)
    throw RuntimeUsageError("embedding '" + label + "': vocab and dim must be > 0, got " +
                            std::to_string(vocab) + " and " + std::to_string(dim));
}

Tensor Embedding::operator()(const Tensor& one_hot) const {
  // A lookup, exact in f32 under any precision policy: rounding the table would also keep the
  // one-hot rewrite from turning the product into a row gather.
  PrecisionScope exact(PrecisionPolicy{});
  return table * one_hot;
}

}  // namespace cannl::nn
