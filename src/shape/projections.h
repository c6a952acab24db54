#pragma once
// Projection derivation (semantics-frontend.md 4.2). Internal to src/shape/.

#include "shape/state.h"

namespace cannl::shape {

/// Projections of a step whose shapes are all closed (after the closing stages): fills
/// `projections`, the concatenation `blocks` and the operands' convolution `paddings`.
void derive_projections(StepRecord& record);
/// Axis-wise maximum of two paddings (empty = none).
void merge_padding(std::vector<ir::AxisPadding>& into, const std::vector<ir::AxisPadding>& from);

}  // namespace cannl::shape
