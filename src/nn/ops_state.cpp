// running_average (include/cannl/nn/ops.h): a statistic that also updates persistent state in
// its forward code, so the state advances whenever a routine computing the statistic runs
// (BatchNorm's running mean and variance, updated by the training step as in PyTorch).
#include "cannl/nn/ops.h"

#include <cmath>

#include "cannl/support/error.h"
#include "cannl/tensor/gradient_rule.h"

namespace cannl::nn {
namespace {

using detail::ap;
using detail::arg;
using detail::g;
using detail::lit;
using ir::Op;

std::int64_t elements(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

/// n / (n - 1) with n = how many cells of `sample` each cell of `stat` summarizes.
double bessel_factor(const Tensor& stat, const Tensor& sample) {
  const std::int64_t n = elements(sample.value()->dims) / elements(stat.value()->dims);
  if (n < 2)
    throw ShapeError("running_average '" + stat.label() + "': an unbiased estimate needs more than 1 value per statistic, got " +
                     std::to_string(n) + " (sample '" + sample.label() + "')");
  return static_cast<double>(n) / static_cast<double>(n - 1);
}

}  // namespace

Tensor running_average(const Tensor& stat, const Tensor& running, const RunningAverageOptions& o) {
  if (!(o.momentum >= 0 && o.momentum <= 1))
    throw RuntimeUsageError("running_average: momentum must lie in [0, 1], got " +
                            std::to_string(o.momentum));
  if (running.requires_grad() || running.impl().host_values == nullptr)
    throw RuntimeUsageError("running_average: the state '" + running.label() +
                            "' must be a host literal (not a parameter or a computed tensor)");
  detail::OpSpec spec;
  spec.label = stat.label() + "_tracked";
  spec.args = {stat, running};
  // Equal shapes (an einsum's rows are equations): a pointwise result could be broadcast up to
  // the shape of its consumers, and the state must keep the statistic's.
  spec.logic = shape::Einsum{"...|...->...; ...|...->... => ...|...->..."};
  const double momentum = o.momentum;
  const std::optional<Tensor> sample = o.unbiased_over;
  spec.forward = [momentum, sample](const Tensor& self, const ir::Projections& p) {
    const Tensor& state = self.args()[1];
    if (state.value()->dims != self.value()->dims)
      throw ShapeError("running_average: state '" + state.label() + "' has " +
                       std::to_string(elements(state.value()->dims)) + " cells but the statistic '" +
                       self.args()[0].label() + "' has " + std::to_string(elements(self.value()->dims)));
    const double scale = sample ? bessel_factor(self.args()[0], *sample) : 1.0;
    // state = (1 - momentum) state + momentum * scale * stat, read from the copy just written.
    auto update = ap(Op::Add, {ap(Op::Mul, {lit(1 - momentum), arg(1)}),
                               ap(Op::Mul, {lit(momentum * scale), arg(0)})});
    return std::vector<ir::AsgnRef>{
        detail::forward_assign(self, p, Op::Arg2, Op::Identity, arg(0)),
        detail::grad_assign(state.value(), p, 1, {{self.value(), -1}, {state.value(), 1}}, update,
                            Op::Arg2)};
  };
  spec.backward = detail::backward_of({{g()}, {nullptr}});
  return detail::make_op(std::move(spec));
}

}  // namespace cannl::nn
