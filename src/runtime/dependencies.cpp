#include "runtime/dependencies.h"

#include <algorithm>

#include "cannl/support/error.h"

namespace cannl::runtime {

namespace {

void add_dependency(const ContextState& state, std::vector<Dependency>& deps, int routine_id,
                    const ir::NodeRef& node, DependencyKind kind) {
  if (routine_id < 0) return;
  // One reason per routine is enough for messages, but a read after write and the other kinds
  // do not weigh the same: an upload of the linking node excuses only a read after write
  // (check_dependencies_ran). So a routine keeps one reason of each weight, or uploading the
  // node it writes and this one reads would excuse the write after write / read it also has.
  const bool reads = kind == DependencyKind::ReadAfterWrite;
  for (const auto& d : deps)
    if (d.routine_id == routine_id && (d.kind == DependencyKind::ReadAfterWrite) == reads) return;
  deps.push_back({routine_id, state.routine_names.at(routine_id), node, kind});
}

std::string_view kind_text(DependencyKind kind) {
  switch (kind) {
    case DependencyKind::ReadAfterWrite: return "writes node {n}, which";
    case DependencyKind::WriteAfterWrite: return "also writes node {n}, which";
    case DependencyKind::WriteAfterRead: return "reads node {n}, which";
  }
  return "";
}

std::string explain(const Dependency& dep, const RoutineData& routine) {
  std::string text(kind_text(dep.kind));
  text.replace(text.find("{n}"), 3, describe_node(*dep.node));
  const bool reads = dep.kind == DependencyKind::ReadAfterWrite;
  return "routine '" + routine.name + "' depends on routine '" + dep.routine_name +
         "', which has never run in this context: '" + dep.routine_name + "' " + text + " '" +
         routine.name + "' " + (reads ? "reads" : "overwrites") + ". Run '" + dep.routine_name +
         "' first";
}

}  // namespace

std::vector<Dependency> record_dependencies(ContextState& state, const RoutineData& routine) {
  std::vector<Dependency> deps;
  for (const auto& node : routine.inputs) {
    auto it = state.history.find(node->id);
    if (it != state.history.end())
      add_dependency(state, deps, it->second.last_writer, node, DependencyKind::ReadAfterWrite);
  }
  for (const auto& node : routine.outputs) {
    auto it = state.history.find(node->id);
    if (it == state.history.end()) continue;
    add_dependency(state, deps, it->second.last_writer, node, DependencyKind::WriteAfterWrite);
    for (int reader : it->second.readers_since)
      add_dependency(state, deps, reader, node, DependencyKind::WriteAfterRead);
  }
  for (const auto& node : routine.inputs) {
    auto& readers = state.history[node->id].readers_since;
    if (std::find(readers.begin(), readers.end(), routine.id) == readers.end())
      readers.push_back(routine.id);
  }
  for (const auto& node : routine.outputs) {
    auto& entry = state.history[node->id];
    entry.last_writer = routine.id;
    entry.readers_since.clear();
  }
  return deps;
}

void check_dependencies_ran(const ContextState& state, const RoutineData& routine) {
  for (const auto& dep : routine.dependencies) {
    if (state.routines_run.contains(dep.routine_id)) continue;
    // The value the writer would have produced was given from outside instead (a restored
    // checkpoint, an upload, a copy): reading it is what the caller asked for.
    if (dep.kind == DependencyKind::ReadAfterWrite && state.written_from_outside.contains(dep.node->id)) continue;
    throw RuntimeUsageError(explain(dep, routine));
  }
}

}  // namespace cannl::runtime
