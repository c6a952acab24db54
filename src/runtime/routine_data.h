#pragma once
// Private state of a compiled routine (the Routine handle's Impl) and of execution dependencies.
// Context members reach it through `Routine::impl_`; helpers take `RoutineData&` so they need no
// friendship.
//
//   RoutineData& data = *routine.impl_;   // inside a Context member

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cannl/backends/backend.h"
#include "cannl/runtime/context.h"
#include "runtime/packing.h"

namespace cannl::runtime {

/// Why a routine must run after another one: the earlier routine touches `node` first.
enum class DependencyKind { ReadAfterWrite, WriteAfterWrite, WriteAfterRead };

/// "routine `name` (id) must have run at least once before this one", because of `node`.
struct Dependency {
  int routine_id = 0;
  std::string routine_name;
  ir::NodeRef node;
  DependencyKind kind = DependencyKind::ReadAfterWrite;
};

struct RoutineData {
  std::string name;
  int id = 0;
  std::vector<ir::StaticSymbol> statics;
  std::vector<ir::NodeRef> inputs;
  std::vector<ir::NodeRef> outputs;
  ir::LoweredRoutine lowered;
  /// Nodes bound to the executable's buffer parameters, in order.
  std::vector<ir::NodeRef> params;
  std::unique_ptr<backends::Executable> executable;
  std::string source;
  std::vector<Dependency> dependencies;
  /// The fills of the operands a hoisted Stage packs (none: nullopt).
  std::optional<Packing> packing;
  /// The context the routine was linked into; running it elsewhere is a usage error.
  std::weak_ptr<const ContextState> owner;
};

struct Routine::Impl : RoutineData {};

/// Turns an arbitrary routine name into a C identifier: other characters become '_', a leading
/// digit gets a '_' prefix, and an empty name becomes "routine".
///   sanitize_routine_name("train step-2") == "train_step_2"
std::string sanitize_routine_name(const std::string& name);

}  // namespace cannl::runtime
