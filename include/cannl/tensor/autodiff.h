#pragma once
// From tensor graphs to Assignments: forward code, backprop, parameter initialization.
//
//   ir::Comp step = grad_update_code(loss);      // forward; zero grads; grad(loss) := 1; backprop
//   ir::Comp init = init_params_code(params_of({loss}));

#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/tensor/tensor.h"

namespace cannl {

/// Every tensor the roots depend on, arguments before their users, each once.
std::vector<Tensor> topological_order(const std::vector<Tensor>& roots);
/// The parameters among them, in first-use order.
std::vector<Tensor> params_of(const std::vector<Tensor>& roots);
/// Host literals among them.
std::vector<Tensor> literals_of(const std::vector<Tensor>& roots);
/// Finishes shape inference and gives every reachable node (values and grads) its dims.
void resolve_shapes(const std::vector<Tensor>& roots);

/// Computes the roots from parameters and literals (which must be initialized / uploaded).
ir::Comp forward_code(const std::vector<Tensor>& roots);
/// Forward, then every gradient zeroed by its own code, the loss gradient seeded with 1 (the
/// gradient of the sum of the loss's cells), then backprop in reverse topological order.
ir::Comp grad_update_code(const Tensor& loss);
/// Projections writing every cell of `dims` once and reading `n_args` operands at the same index
/// (optimizer updates, parameter initialization).
ir::Projections identity_projections(const std::vector<std::int64_t>& dims, int n_args);

/// Initializes parameters from their Init (counter-based threefry keyed by `seed` and the name).
ir::Comp init_params_code(const std::vector<Tensor>& params);

}  // namespace cannl
