#pragma once
// Execution dependencies between the routines of one context (semantics-backend.md 7).
//
// At compile time each routine depends on: the last writer of each input (read after write); the
// last writer of each output (write after write) and every routine that read that output since
// (write after read). Running a routine requires each of them to have run at least once, which
// catches e.g. an optimizer update run before the gradient routine ever produced gradients. A read
// after write is also satisfied when the linking node's current value came from outside the
// routines (an upload, a restored checkpoint, a copy from another device): evaluating restored
// weights needs no training step first. (The reference requires the writer to have run.)
//
//   routine.dependencies = record_dependencies(state, routine);   // at compile
//   check_dependencies_ran(state, routine);                       // at run

#include <vector>

#include "runtime/context_state.h"
#include "runtime/routine_data.h"

namespace cannl::runtime {

/// Computes the routine's dependencies on earlier routines from the ledger, then records the
/// routine as the last writer of its outputs and a reader of its inputs.
std::vector<Dependency> record_dependencies(ContextState& state, const RoutineData& routine);

/// Throws RuntimeUsageError naming both routines and the linking node when a dependency never ran.
void check_dependencies_ran(const ContextState& state, const RoutineData& routine);

}  // namespace cannl::runtime
