// Materialized one-hot selector producers (see one_hot_producers.h).
#include "one_hot_producers.h"

#include <algorithm>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::opt {

namespace {

// How many statements of the routine write each node (Set, SetDynamic, ZeroOut).
std::map<int, int> write_counts(const std::vector<ir::StmtRef>& top) {
  std::map<int, int> out;
  for (const auto& s : top) {
    for_each_stmt(s, [&](const ir::Stmt& x) {
      if (const auto* w = std::get_if<ir::Set>(&x.node)) ++out[w->node->id];
      if (const auto* w = std::get_if<ir::SetDynamic>(&x.node)) ++out[w->node->id];
      if (const auto* w = std::get_if<ir::ZeroOut>(&x.node)) ++out[w->node->id];
    });
  }
  return out;
}

bool has_locals(const ir::ScalarRef& s) {
  bool found = false;
  for_each_scalar(s, [&](const ir::Scalar& x) {
    found = found || std::holds_alternative<ir::LocalScope>(x.node) || std::holds_alternative<ir::GetLocal>(x.node);
  });
  return found;
}

// The loop symbol of each axis when the nest writes every cell of `set.node` exactly once.
std::optional<std::vector<ir::Symbol>> full_cover(const std::vector<const ir::For*>& loops, const ir::Set& set) {
  if (loops.size() != set.index.size() || set.node->dims.size() != set.index.size()) return std::nullopt;
  std::vector<ir::Symbol> axes;
  for (std::size_t a = 0; a < set.index.size(); ++a) {
    const auto it = std::find_if(loops.begin(), loops.end(), [&](const ir::For* f) {
      return set.index[a] == ir::AxisIndex::iterator(f->index);
    });
    if (it == loops.end() || (*it)->begin != 0 || (*it)->end != set.node->dims[a]) return std::nullopt;
    if (std::find(axes.begin(), axes.end(), (*it)->index) != axes.end()) return std::nullopt;
    axes.push_back((*it)->index);
  }
  return axes;
}

}  // namespace

SelectorProducers::SelectorProducers(const std::vector<ir::StmtRef>& top) {
  const auto writes = write_counts(top);
  for (std::size_t t = 0; t < top.size(); ++t) {
    std::vector<const ir::For*> loops;
    ir::StmtRef cur = top[t];
    while (const auto* f = std::get_if<ir::For>(&cur->node)) {
      loops.push_back(f);
      cur = f->body;
    }
    const auto* set = std::get_if<ir::Set>(&cur->node);
    if (!set || writes.at(set->node->id) != 1 || has_locals(set->value)) continue;
    const auto axes = full_cover(loops, *set);
    if (!axes) continue;
    const auto inputs = ir::nodes_of(set->value);
    const bool inputs_fixed = std::none_of(inputs.begin(), inputs.end(),
                                           [&](const ir::NodeRef& n) { return writes.contains(n->id); });
    const bool selector = std::any_of(loops.begin(), loops.end(), [&](const ir::For* f) {
      return selector_of(set->value, f->index, f->end).has_value();
    });
    if (inputs_fixed && selector) producers_[set->node->id] = Producer{*axes, set->value, set->node->dtype, t};
  }
}

SelectorSource SelectorProducers::source_at(std::size_t t) const {
  return [this, t](const ir::Get& g) -> std::optional<ir::ScalarRef> {
    const auto it = producers_.find(g.node->id);
    if (it == producers_.end() || it->second.at >= t) return std::nullopt;
    ir::Replay replay;
    for (std::size_t a = 0; a < it->second.axes.size(); ++a) replay.bind(it->second.axes[a], g.index[a]);
    return converted(replay.scalar(it->second.value), it->second.dtype);  // the store's conversion
  };
}

}  // namespace cannl::opt
