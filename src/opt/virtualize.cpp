// Virtualization (see virtualize.h). A read is rewritten with the writers captured *before* its
// statement, so each inlined value is the one the buffer would hold at that point.
#include "opt/virtualize.h"

#include <map>

#include "cannl/ir/rewrite.h"
#include "opt/inline.h"

namespace cannl::opt {

using namespace ir;

namespace {

/// The candidate this statement writes (ZeroOut or nest store), or -1.
int written_candidate(const StmtRef& s, const std::set<int>& candidates) {
  int id = -1;
  if (const auto* z = std::get_if<ZeroOut>(&s->node)) id = z->node->id;
  else if (const auto nest = as_loop_nest(s)) id = nest->store->node->id;
  return candidates.contains(id) ? id : -1;
}

}  // namespace

LoweredRoutine virtualize(const LoweredRoutine& routine, const Trace& trace,
                          const std::set<int>& candidates) {
  std::map<int, Computation> computations;
  for (int id : candidates) computations[id].node = trace.nodes.at(id).node;
  auto rewrite_statement = [&](const StmtRef& s) -> StmtRef {
    const int self = written_candidate(s, candidates);
    const StmtRef out = ir::map_gets(s, [&](const Get& g) -> std::optional<ScalarRef> {
      if (g.node->id == self) return std::nullopt;  // an accumulation's own cell
      const auto it = computations.find(g.node->id);
      if (it == computations.end()) return std::nullopt;
      return inline_computation(it->second, g.index);
    });
    if (self >= 0) computations.at(self).writers.push_back(out);
    return out;
  };
  return LoweredRoutine{routine.name, map_statements(routine.body, rewrite_statement),
                        routine.statics};
}

}  // namespace cannl::opt
