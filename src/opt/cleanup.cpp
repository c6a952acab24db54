// Cleanup (see cleanup.h). Surviving reads are looked for in the code that would remain:
// restoring a survivor's writers can expose more surviving reads, hence the fixed point.
#include "opt/cleanup.h"

#include <set>

#include "opt/provenance.h"

namespace cannl::opt {

using namespace ir;

namespace {

int written_node(const StmtRef& s) {
  if (const auto* z = std::get_if<ZeroOut>(&s->node)) return z->node->id;
  if (const auto nest = as_loop_nest(s)) return nest->store->node->id;
  return -1;
}

/// Virtual nodes still accessed by statements that are not writes of virtual nodes.
std::set<int> survivors(const StmtRef& body, const std::set<int>& virtual_nodes) {
  std::set<int> out;
  for_each_statement(body, [&](const StmtRef& s) {
    if (virtual_nodes.contains(written_node(s))) return;  // dropped with its node
    for (const auto& n : nodes_of(s))
      if (virtual_nodes.contains(n->id)) out.insert(n->id);
  });
  return out;
}

}  // namespace

LoweredRoutine cleanup_virtual(const LoweredRoutine& routine, const Trace& trace,
                               Placements& placements, const PassContext& ctx) {
  std::set<int>& virtual_nodes = placements.virtual_candidates;
  for (auto alive = survivors(routine.body, virtual_nodes); !alive.empty();
       alive = survivors(routine.body, virtual_nodes)) {
    for (int id : alive) {
      virtual_nodes.erase(id);
      placements.decisions[id] = stored_private(*trace.nodes.at(id).node, ctx,
                                                provenance::kSurvivingRead,
                                                "a read could not be inlined");
    }
  }
  auto drop_virtual_writes = [&](const StmtRef& s) -> StmtRef {
    return virtual_nodes.contains(written_node(s)) ? nullptr : s;
  };
  return LoweredRoutine{routine.name, map_statements(routine.body, drop_virtual_writes),
                        routine.statics};
}

}  // namespace cannl::opt
