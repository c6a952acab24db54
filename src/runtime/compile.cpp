// Context::compile: lower, verify, dump, allocate, compile and link a routine into a context.
#include <string>

#include "cannl/ir/lower.h"
#include "cannl/ir/verify.h"
#include "cannl/runtime/context.h"
#include "cannl/support/files.h"
#include "cannl/support/log.h"
#include "runtime/context_state.h"
#include "runtime/dependencies.h"
#include "runtime/host_transfer.h"
#include "runtime/routine_data.h"

namespace cannl::runtime {

namespace {

/// Debug level 2: the Assignments IR (.cd) and the lowered loop IR (.ll) under build_files/<exe>/.
void dump_ir(const ir::Comp& comp, const ir::LoweredRoutine& lowered) {
  if (log::debug_level() < 2) return;
  const auto dir = files::build_dir();
  files::write_atomically(dir / (lowered.name + ".cd"), ir::print_assignments(comp));
  files::write_atomically(dir / (lowered.name + ".ll"), ir::print_loop_ir(lowered));
}

void lower_and_verify(const ir::Comp& comp, RoutineData& data) {
  {
    log::ScopedTimer timer("lower " + data.name);
    data.lowered = ir::lower(comp, data.name);
  }
  {
    log::ScopedTimer timer("verify " + data.name);
    ir::verify(data.lowered);
  }
  dump_ir(comp, data.lowered);
  data.statics = data.lowered.statics;
  data.params = ir::nodes_of(data.lowered.body);
  data.inputs = ir::read_before_initialized(comp);
  data.outputs = ir::written_nodes(comp);
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

}  // namespace

Routine Context::compile(const ir::Comp& comp, const std::string& name) {
  auto impl = std::make_shared<Routine::Impl>();
  RoutineData& data = *impl;
  data.name = sanitize_routine_name(name);
  log::ScopedTimer total("compile " + data.name);
  lower_and_verify(comp, data);
  {
    log::ScopedTimer timer("backend compile " + data.name);
    data.executable = state_->backend->compile({data.lowered, data.params});
  }
  data.source = data.executable->source();
  link_buffers(*state_, data);
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
