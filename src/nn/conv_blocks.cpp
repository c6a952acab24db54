// Conv2d, depthwise-separable convolution and pooling blocks (include/cannl/nn/conv_blocks.h).
#include "cannl/nn/conv_blocks.h"

#include "cannl/support/error.h"
#include "cannl/tensor/einsum_ops.h"

namespace cannl::nn {
namespace {

using Dims = std::vector<std::int64_t>;

Conv2dOptions checked(const std::string& label, const Conv2dOptions& o) {
  if (o.in_channels <= 0 || o.out_channels <= 0 || o.kernel <= 0 || o.stride <= 0 || o.dilation <= 0)
    throw RuntimeUsageError("conv2d '" + label +
                            "': in_channels, out_channels, kernel, stride and dilation must be > 0 "
                            "(got " + std::to_string(o.in_channels) + ", " +
                            std::to_string(o.out_channels) + ", " + std::to_string(o.kernel) + ", " +
                            std::to_string(o.stride) + ", " + std::to_string(o.dilation) + ")");
  return o;
}

/// Kaiming uniform from the fan-in (the product of the input row).
Tensor kernel_param(const std::string& name, Dims input, Dims output) {
  return param(name, {.input = std::move(input), .output = std::move(output),
                      .init = {.kind = InitKind::Kaiming}});
}

std::optional<Tensor> bias_param(const std::string& name, const Conv2dOptions& o) {
  if (!o.bias) return std::nullopt;
  return param(name, {.input = Dims{}, .output = Dims{o.out_channels},
                      .init = {.kind = InitKind::Constant, .value = 0.0}});
}

/// `stride*out=+dilation*kernel` (padded) or `<+` (valid): one spatial axis of a convolution spec.
std::string conv_axis(const std::string& out, const std::string& kernel, const Conv2dOptions& o) {
  return std::to_string(o.stride) + "*" + out + (o.padding ? "=+" : "<+") +
         std::to_string(o.dilation) + "*" + kernel;
}

Tensor with_bias(const Tensor& y, const std::optional<Tensor>& b) { return b ? y + *b : y; }

}  // namespace

Conv2d::Conv2d(const std::string& label, const Conv2dOptions& options)
    : w(kernel_param(label + "_w",
                     Dims{checked(label, options).kernel, options.kernel, options.in_channels},
                     Dims{options.out_channels})),
      b(bias_param(label + "_b", options)),
      options(options) {}

Tensor Conv2d::operator()(const Tensor& x) const {
  return with_bias(conv2d(x, w, {.stride = options.stride, .dilation = options.dilation,
                                 .padding = options.padding}),
                   b);
}

DepthwiseSeparableConv2d::DepthwiseSeparableConv2d(const std::string& label,
                                                   const Conv2dOptions& options)
    : depthwise(kernel_param(label + "_depthwise", Dims{checked(label, options).kernel, options.kernel},
                             Dims{options.in_channels})),
      pointwise(kernel_param(label + "_pointwise", Dims{options.in_channels}, Dims{options.out_channels})),
      b(bias_param(label + "_b", options)),
      options(options) {}

Tensor DepthwiseSeparableConv2d::operator()(const Tensor& x) const {
  // Each channel c is convolved with its own kernel depthwise[c]: c is kept, not reduced.
  Tensor per_channel = einsum("...|" + conv_axis("h", "kh", options) + ", " +
                                  conv_axis("w", "kw", options) + ", c; |kh, kw -> c => ...|h, w, c",
                              x, depthwise);
  return with_bias(einsum("...|h, w, c; |c -> o => ...|h, w, o", per_channel, pointwise), b);
}

MaxPool2d::MaxPool2d(const PoolOptions& options) : options(options) {}
Tensor MaxPool2d::operator()(const Tensor& x) const {
  return max_pool2d(x, options.window, options.stride);
}

AvgPool2d::AvgPool2d(const PoolOptions& options) : options(options) {}
Tensor AvgPool2d::operator()(const Tensor& x) const {
  return avg_pool2d(x, options.window, options.stride);
}

}  // namespace cannl::nn
