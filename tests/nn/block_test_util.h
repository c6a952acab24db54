#pragma once
// Shared helpers of the nn block tests: differentiable batch inputs and deterministic values.

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/cannl.h"
#include "gradient_check.h"  // lcg_values

namespace cannl::testing_util {

using Dims = std::vector<std::int64_t>;

/// A parameter-backed input with batch axes: rows * identity, where `rows` is a parameter
/// [features <- n] (n = product of batch) and the identity literal has batch `batch`, output [n].
/// The gradient of the rows parameter is the gradient of the batch input (transposed: the
/// parameter's memory order is [features, n]).
///   Tensor x = batch_input(ps, "x", {2, 3}, {4});   // batch [2, 3], output [4]
inline Tensor batch_input(std::vector<Tensor>& params, const std::string& name, const Dims& batch,
                          const Dims& features) {
  std::int64_t n = 1;
  for (auto d : batch) n *= d;
  std::vector<double> identity(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) identity[static_cast<std::size_t>(i * n + i)] = 1;
  params.push_back(param(name, {.input = Dims{n}, .output = features}));
  Tensor selector = literal(name + "_rows", std::move(identity),
                            {.batch = batch, .input = Dims{}, .output = Dims{n}});
  return params.back() * selector;
}

struct LossAndGradient {
  double loss = 0;
  std::vector<double> gradient;
};

/// Runs grad_update_code(loss) once in `ctx` with `param` set to `values` (memory order) and
/// returns the loss and param's gradient.
///   auto [loss, grad] = loss_and_gradient(runtime::Context::cpu(), loss, params[0], {1, 2, 3, 4});
inline LossAndGradient loss_and_gradient(runtime::Context ctx, const Tensor& loss, const Tensor& param,
                                         const std::vector<double>& values) {
  auto routine = ctx.compile(grad_update_code(loss), "loss_and_gradient");
  train::upload_literals(ctx, {loss});
  ctx.set_values(param.value(), values);
  ctx.run(routine);
  return {ctx.get_values(loss.value()).at(0), ctx.get_values(param.grad())};
}

}  // namespace cannl::testing_util
