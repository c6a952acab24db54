#pragma once
// Constraint generation per operation (semantics-frontend.md 3.3). Internal to src/shape/.

#include <vector>

#include "shape/state.h"

namespace cannl::shape {

/// The constraints of `record.step` (fills `record.spec` for einsum steps); marks shapes as
/// terminal/param. Throws EinsumSyntaxError / ShapeError for malformed steps.
std::vector<Constraint> generate_constraints(StepRecord& record, const OriginRef& origin);

}  // namespace cannl::shape
