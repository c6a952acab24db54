// Context::compile: lower, verify, dump, schedule, allocate, compile and link a routine into a
// context.
#include <map>
#include <set>
#include <string>

#include "cannl/ir/lower.h"
#include "cannl/ir/verify.h"
#include "cannl/opt/fold_guards.h"
#include "cannl/opt/optimize.h"
#include "cannl/runtime/context.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "runtime/context_state.h"
#include "runtime/dependencies.h"
#include "runtime/host_transfer.h"
#include "runtime/link_undo.h"
#include "runtime/packing.h"
#include "runtime/routine_data.h"

namespace cannl::runtime {

namespace {

/// Debug level 2: the Assignments IR (.cd) and the lowered loop IR (.ll) under build_files/<exe>/.
void dump_ir(const ir::Comp& comp, const ir::LoweredRoutine& lowered) {
  if (logging::debug_level() < 2) return;
  const auto dir = files::build_dir();
  files::write_atomically(dir / (lowered.name + ".cd"), ir::print_assignments(comp));
  files::write_atomically(dir / (lowered.name + ".ll"), ir::print_loop_ir(lowered));
}

/// The nodes the lineage already holds: the optimizer must keep them in their buffers.
opt::PassContext pass_context(const ContextState& state, const std::string& name, const CompileOptions& options) {
  auto ctx = opt::PassContext::from_config(name);
  if (options.materialize_all) ctx.max_visits = 0;
  for (const auto& [id, buffer] : state.buffers) ctx.persistent_nodes.insert(id);
  for (const auto& [id, history] : state.history) ctx.persistent_nodes.insert(id);
  for (int id : state.initialized) ctx.persistent_nodes.insert(id);
  return ctx;
}

bool on_device(const opt::Optimized& o, const ir::NodeRef& node) {
  const auto it = o.decisions.find(node->id);
  return it == o.decisions.end() || it->second.placement == opt::Placement::OnDevice;
}

std::vector<ir::NodeRef> only_on_device(const opt::Optimized& o, std::vector<ir::NodeRef> nodes) {
  std::erase_if(nodes, [&](const ir::NodeRef& n) { return !on_device(o, n); });
  return nodes;
}

/// `nodes` without those `before` does not touch (nodes the schedule added).
std::vector<ir::NodeRef> nodes_not_added(const ir::LoweredRoutine& before, std::vector<ir::NodeRef> nodes) {
  std::set<int> known;
  for (const auto& n : ir::nodes_of(before.body)) known.insert(n->id);
  std::erase_if(nodes, [&](const ir::NodeRef& n) { return !known.contains(n->id); });
  return nodes;
}

/// Lowers, verifies and optimizes against the nodes the context holds.
opt::Optimized lower_and_optimize(const ir::Comp& comp, const ContextState& state, const std::string& name,
                                  const CompileOptions& options) {
  ir::LoweredRoutine lowered;
  {
    logging::ScopedTimer timer("lower " + name);
    lowered = ir::lower(comp, name);
  }
  {
    logging::ScopedTimer timer("verify " + name);
    ir::verify(lowered);
  }
  dump_ir(comp, lowered);
  return opt::optimize(lowered, pass_context(state, name, options));
}

/// The schedule runs after the optimizer (semantics-backend.md 8: virtualize -> schedule): the
/// caller's when it brings one, else the backend's default; then the guards it made are folded.
ir::LoweredRoutine scheduled(const ContextState& state, const ir::LoweredRoutine& routine,
                             const CompileOptions& options) {
  logging::ScopedTimer timer("schedule " + routine.name);
  const ir::LoweredRoutine out = options.schedule ? options.schedule->apply(routine)
                                 : options.target ? state.backend->default_schedule_for(routine, *options.target)
                                                  : state.backend->default_schedule(routine);
  // The guards the schedule's transforms left that loop ranges now decide (optimize=false: the
  // scheduled routine as it is).
  return config::get_bool("optimize") ? opt::fold_guards(out) : out;
}

/// The routine's signature: only OnDevice nodes become buffer parameters (Local nodes are arrays
/// inside the routine, Virtual ones are gone). Nodes the schedule added are scratch (the partials
/// of an interleaved reduction, staged tiles): arrays inside the routine, never parameters, so
/// the placements stay valid.
void describe_signature(const ir::Comp& comp, const opt::Optimized& optimized, RoutineData& data) {
  data.statics = data.lowered.statics;
  data.params = only_on_device(optimized, nodes_not_added(optimized.routine, ir::nodes_of(data.lowered.body)));
  data.inputs = only_on_device(optimized, ir::read_before_initialized(comp));
  data.outputs = only_on_device(optimized, ir::written_nodes(comp));
  // Packed operands are schedule-made too, but persistent: filled once, read by every call.
  for (const ir::PackedOperand& p : data.lowered.packed) data.params.push_back(p.packed);
}

/// Remembers which nodes this routine optimized away, so host reads can say why they fail.
void record_placements(ContextState& state, const opt::Optimized& o, const std::string& routine) {
  for (const auto& [id, d] : o.decisions) {
    if (d.placement == opt::Placement::OnDevice) {
      state.optimized_away.erase(id);
    } else if (!state.buffers.contains(id)) {
      state.optimized_away[id] = "routine '" + routine + "' decided it " + opt::describe_decision(d);
    }
  }
}

/// Every node the routine touches gets a buffer (until the optimizer decides placements);
/// nodes carrying host-init data (literals, loaded weights) are uploaded once, here.
void link_buffers(ContextState& state, const RoutineData& data) {
  auto link = [&state](const ir::NodeRef& node) {
    state.ensure_buffer(node);
    if (node->host_init && !state.initialized.contains(node->id))
      upload_logical_bytes(state, node, *node->host_init, "host-init upload");
  };
  for (const auto& node : data.params) link(node);
  for (const auto& node : data.inputs) link(node);
  for (const auto& node : data.outputs) link(node);
}

/// Links the routine's buffers and packs its packed operands, or, when that fails, leaves the
/// context as it was (no buffers, no uploads of this routine): the compile is all or nothing.
void link(ContextState& state, RoutineData& data) {
  const std::span<const ir::NodeRef> packing_params =
      data.packing ? std::span<const ir::NodeRef>(data.packing->params) : std::span<const ir::NodeRef>();
  LinkUndo undo(state, {data.params, data.inputs, data.outputs, packing_params});
  try {
    link_buffers(state, data);
    if (data.packing && sources_initialized(state, *data.packing)) {
      state.wait_for_device();  // the sources may still be written by queued runs
      refresh_packing(state, *data.packing);
    }
  } catch (...) {
    undo.roll_back();
    throw;
  }
}

}  // namespace

ir::LoweredRoutine Context::optimized_routine(const ir::Comp& comp, const std::string& name,
                                              const CompileOptions& options) const {
  return lower_and_optimize(comp, *state_, sanitize_routine_name(name), options).routine;
}

void Context::prebuild(const ir::Comp& comp, const std::string& name, std::span<const CompileOptions> options) const {
  const std::string routine_name = sanitize_routine_name(name);
  logging::ScopedTimer total("prebuild " + routine_name);
  // One optimized routine per placement arm: the schedules of one arm all start from it.
  std::map<bool, opt::Optimized> optimized;
  std::vector<backends::CompileRequest> requests;
  for (const CompileOptions& o : options) {
    try {
      auto it = optimized.find(o.materialize_all);
      if (it == optimized.end())
        it = optimized.emplace(o.materialize_all, lower_and_optimize(comp, *state_, routine_name, o)).first;
      RoutineData data;
      data.lowered = scheduled(*state_, it->second.routine, o);
      describe_signature(comp, it->second, data);
      requests.push_back({data.lowered, data.params, o.target});
    } catch (const UserError&) {
      // Its compile throws the same error.
    }
  }
  state_->backend->prebuild(requests);
}

Routine Context::compile(const ir::Comp& comp, const std::string& name, const CompileOptions& options) {
  auto impl = std::make_shared<Routine::Impl>();
  RoutineData& data = *impl;
  data.name = sanitize_routine_name(name);
  logging::ScopedTimer total("compile " + data.name);
  const opt::Optimized optimized = lower_and_optimize(comp, *state_, data.name, options);
  data.lowered = scheduled(*state_, optimized.routine, options);
  describe_signature(comp, optimized, data);
  {
    logging::ScopedTimer timer("backend compile " + data.name);
    data.executable = state_->backend->compile({data.lowered, data.params, options.target});
  }
  data.packing = compile_packing(*state_, data.lowered, options.target);
  data.lowered = data.executable->routine();  // with the target's decisions (final lowering round)
  if (logging::debug_level() >= 2)
    files::write_atomically(files::build_dir() / (data.name + ".final.ll"), ir::print_loop_ir(data.lowered));
  data.source = data.executable->source();
  link(*state_, data);
  record_placements(*state_, optimized, data.name);
  // The ledger changes only once compilation succeeded, so a failed compile leaves no trace.
  data.id = state_->next_routine_id++;
  state_->routine_names[data.id] = data.name;
  data.dependencies = record_dependencies(*state_, data);
  data.owner = state_;
  Routine routine;
  routine.impl_ = std::move(impl);
  return routine;
}

}  // namespace cannl::runtime
