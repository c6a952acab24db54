#pragma once
// Convolution and pooling blocks over channels-last images: x has batch axes and output axes
// [h, w, channels] (PyTorch's NCHW becomes batch | h, w, c). Kernels are parameters with input
// [kh, kw, in_channels] and output [out_channels], memory order [out, kh, kw, in].
//
//   nn::Conv2d c1("c1", {.in_channels = 1, .out_channels = 6, .kernel = 5, .padding = true});
//   nn::MaxPool2d pool({.window = 2});
//   Tensor h = pool(relu(c1(x)));              // x: batch | 28, 28, 1  ->  batch | 14, 14, 6
#include <cstdint>
#include <optional>
#include <string>

#include "cannl/tensor/tensor.h"

namespace cannl::nn {

/// `padding` = true keeps ceil(size / stride) positions per axis with the window centred: it is
/// PyTorch's padding = dilation * (kernel - 1) / 2 for an odd kernel on sizes divisible by the
/// stride (cannl requires that divisibility). false is a valid (unpadded) convolution.
struct Conv2dOptions {
  std::int64_t in_channels = 0;   // required
  std::int64_t out_channels = 0;  // required
  std::int64_t kernel = 3;        // kh = kw
  std::int64_t stride = 1;
  std::int64_t dilation = 1;
  bool padding = false;
  bool bias = true;
};

/// 2-D convolution with a per-output-channel bias:
///   y[b, oh, ow, f] = sum_{kh, kw, c} x[b, s oh + d kh - pad, s ow + d kw - pad, c] w[f, kh, kw, c] + b[f]
/// The kernel is initialized from fan-in (Kaiming uniform, +-sqrt(6 / (kernel^2 in_channels))),
/// the bias to 0. Throws RuntimeUsageError for non-positive channels, kernel, stride or dilation.
///   nn::Conv2d conv("conv", {.in_channels = 3, .out_channels = 8, .stride = 2, .padding = true});
struct Conv2d {
  Conv2d(const std::string& label, const Conv2dOptions& options);
  Tensor operator()(const Tensor& x) const;
  Tensor w;                 // input [kernel, kernel, in_channels], output [out_channels]
  std::optional<Tensor> b;  // output [out_channels]
  Conv2dOptions options;
};

/// Depthwise-separable convolution (MobileNet): a per-channel kernel x kernel convolution (no
/// bias, PyTorch Conv2d(c, c, k, groups=c, bias=False)) then a pointwise 1x1 convolution
/// in_channels -> out_channels with bias. Kernels initialized from fan-in (kernel^2 and
/// in_channels), the bias to 0.
///   nn::DepthwiseSeparableConv2d ds("ds", {.in_channels = 8, .out_channels = 16, .padding = true});
struct DepthwiseSeparableConv2d {
  DepthwiseSeparableConv2d(const std::string& label, const Conv2dOptions& options);
  Tensor operator()(const Tensor& x) const;
  Tensor depthwise;         // input [kernel, kernel], output [in_channels]
  Tensor pointwise;         // input [in_channels], output [out_channels]
  std::optional<Tensor> b;  // output [out_channels]
  Conv2dOptions options;
};

/// Pooling geometry: window x window cells, stride 0 = the window; unpadded, so
/// (size - window) must be a multiple of the stride.
struct PoolOptions {
  std::int64_t window = 2;
  std::int64_t stride = 0;
};
/// Max over each window per channel (the gradient goes to the maximal cell; ties all receive it).
///   nn::MaxPool2d pool({.window = 2});  pool(x)   // batch | 8, 8, c -> batch | 4, 4, c
struct MaxPool2d {
  explicit MaxPool2d(const PoolOptions& options = {});
  Tensor operator()(const Tensor& x) const;
  PoolOptions options;
};
/// Mean over each window per channel.
///   nn::AvgPool2d pool({.window = 3, .stride = 2});
struct AvgPool2d {
  explicit AvgPool2d(const PoolOptions& options = {});
  Tensor operator()(const Tensor& x) const;
  PoolOptions options;
};

}  // namespace cannl::nn
