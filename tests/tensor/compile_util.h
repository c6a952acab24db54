#pragma once
// Compiling tensor code in the tensor layer's tests, which link the tensor layer and the layers
// below it only: the same steps as train::compile_forward and train::upload_literals (nn layer).
//
//   auto routine = testing_util::compile_forward(ctx, {y}, "forward");

#include <string>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/tensor.h"

namespace cannl::testing_util {

/// Uploads the host values of every literal under `roots` not yet initialized in `ctx`.
inline void upload_literals(runtime::Context& ctx, const std::vector<Tensor>& roots) {
  resolve_shapes(roots);
  for (const auto& t : literals_of(roots))
    if (!ctx.is_initialized(t.value())) ctx.set_values(t.value(), *t.impl().host_values);
}

/// Compiles the forward code of `outputs` in `ctx`, literals uploaded.
inline runtime::Routine compile_forward(runtime::Context& ctx, const std::vector<Tensor>& outputs,
                                        const std::string& name) {
  ir::Comp comp = forward_code(outputs);
  upload_literals(ctx, outputs);
  return ctx.compile(comp, name);
}

}  // namespace cannl::testing_util
