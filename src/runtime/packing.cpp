// Packed operands: compiling their fills, and running them when a source changed.
#include "runtime/packing.h"

#include <algorithm>

#include "cannl/support/log.h"

namespace cannl::runtime {

namespace {

std::uint64_t write_count(const ContextState& state, const ir::NodeRef& node) {
  const auto it = state.write_counts.find(node->id);
  return it == state.write_counts.end() ? 0 : it->second;
}

std::vector<std::uint64_t> source_counts(const ContextState& state, const Packing& packing) {
  std::vector<std::uint64_t> counts;
  for (const auto& source : packing.sources) counts.push_back(write_count(state, source));
  return counts;
}

// A source handed out through Context::host_storage may have been written in place at any time
// since: no count sees that, so its packing runs before every run.
bool writable_in_place(const ContextState& state, const Packing& packing) {
  return std::any_of(packing.sources.begin(), packing.sources.end(),
                     [&](const ir::NodeRef& n) { return state.host_writable.contains(n->id); });
}

bool stale(const ContextState& state, const Packing& packing, const std::vector<std::uint64_t>& counts) {
  return !packing.packed || counts != packing.packed_at || writable_in_place(state, packing);
}

}  // namespace

std::optional<Packing> compile_packing(ContextState& state, const ir::LoweredRoutine& routine,
                                       const std::optional<ir::Target>& target) {
  if (routine.packed.empty()) return std::nullopt;
  std::vector<ir::StmtRef> fills;
  Packing packing;
  for (const ir::PackedOperand& p : routine.packed) {
    fills.push_back(p.fill);
    if (std::find(packing.sources.begin(), packing.sources.end(), p.source) == packing.sources.end())
      packing.sources.push_back(p.source);
  }
  ir::LoweredRoutine fill{routine.name + "_pack", ir::seq(std::move(fills)), {}, {}};
  logging::ScopedTimer timer("compile packing " + fill.name);
  fill = target ? state.backend->default_schedule_for(fill, *target) : state.backend->default_schedule(fill);
  packing.params = ir::nodes_of(fill.body);
  packing.executable = state.backend->compile({fill, packing.params, target});
  return packing;
}

bool sources_initialized(const ContextState& state, const Packing& packing) {
  return std::all_of(packing.sources.begin(), packing.sources.end(),
                     [&](const ir::NodeRef& n) { return state.initialized.contains(n->id); });
}

bool needs_refresh(const ContextState& state, const Packing& packing) {
  return stale(state, packing, source_counts(state, packing));
}

void refresh_packing(ContextState& state, Packing& packing) {
  std::vector<std::uint64_t> counts = source_counts(state, packing);
  if (!stale(state, packing, counts)) return;
  std::vector<backends::Buffer*> buffers;
  for (const auto& node : packing.params) buffers.push_back(&state.ensure_buffer(node));
  logging::ScopedTimer timer("run " + packing.executable->routine().name);
  packing.executable->run(buffers, {});
  packing.packed_at = std::move(counts);
  packing.packed = true;
}

}  // namespace cannl::runtime
