#pragma once
// Projection derivation (semantics-frontend.md 4.2). Internal to src/shape/.

#include "shape/state.h"

namespace cannl::shape {

/// Projections of a step whose shapes are all closed (after the closing stages).
ir::Projections derive_projections(const StepRecord& record);

}  // namespace cannl::shape
