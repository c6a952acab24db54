#pragma once
// The pending inference split into parts that no variable, shape or step links: closing reads
// the facts of one variable at a time, so each part closes on its own, and a part whose
// constraints cannot hold need not fail the others. Internal to src/shape/.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "shape/state.h"

namespace cannl::shape {

struct InferenceComponent {
  std::vector<std::size_t> steps;           // indices into State::steps, all pending
  std::vector<std::uint64_t> constraints;   // keys of State::pending
  std::vector<std::weak_ptr<Shape>> shapes; // from State::pending_shapes, all live
};

/// The parts of the pending steps, constraints and shapes, in the order of their first step
/// (parts without a step last). Two things share a part when a chain of shared variables (bound
/// ones through their solutions), shapes and steps links them.
std::vector<InferenceComponent> pending_components();

}  // namespace cannl::shape
