// Gradient clipping by global norm (include/cannl/nn/grad_clip.h).
#include "cannl/nn/grad_clip.h"

#include <cmath>

#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "nn/update_util.h"

namespace cannl::nn {

using detail::ap;
using detail::arg;
using detail::lit;
using ir::Op;

ClipCode clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm > 0) || !std::isfinite(max_norm))
    throw RuntimeUsageError("clip_grad_norm: max_norm must be finite and > 0, got " +
                            std::to_string(max_norm));
  if (params.empty()) throw RuntimeUsageError("clip_grad_norm: no parameters to clip");
  resolve_shapes(params);
  ClipCode clip;
  // Accumulated in f64: a sum of many squares in f32 loses digits as it grows.
  clip.norm_sq = detail::state_buffer("grad_norm_sq", ir::DType::F64, {1}, 63);
  clip.code.push_back(ir::make_fetch(clip.norm_sq, ir::FetchConstant{0}));
  for (const auto& p : params)
    clip.code.push_back(detail::reduce_to_scalar(clip.norm_sq, {p.grad()}, ap(Op::Mul, {arg(0), arg(0)})));
  // scale = min(1, max_norm / (norm + 1e-6)), as in torch.nn.utils.clip_grad_norm_.
  auto scale = ap(Op::Min, {lit(1), ap(Op::Div, {lit(max_norm),
                                                ap(Op::Add, {ap(Op::Sqrt, {arg(1)}), lit(1e-6)})})});
  for (const auto& p : params)
    clip.code.push_back(detail::elementwise(p.grad(), Op::Arg2, {p.grad(), clip.norm_sq},
                                            ap(Op::Mul, {arg(0), scale})));
  return clip;
}

}  // namespace cannl::nn
