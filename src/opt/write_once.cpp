// Zeroed, then written once (see write_once.h).
#include "opt/write_once.h"

#include <algorithm>
#include <cstdlib>

#include "cannl/ir/tree_mapper.h"
#include "opt/trace.h"

namespace cannl::opt {

using namespace ir;

namespace {

bool touches(const StmtRef& s, const TensorNode& node) {
  for (const auto& n : nodes_of(s))
    if (n->id == node.id) return true;
  return false;
}

// Whether `index` maps the nest's loop box one-to-one onto cells of `node`: every term is a loop
// of the nest, and the loops' flat strides, by size, each exceed what all smaller ones can reach
// (a mixed radix: two iterations that differ give different offsets).
bool one_to_one(const TensorNode& node, const std::vector<AxisIndex>& index, const std::vector<const For*>& loops) {
  for (const AxisIndex& axis : index)
    for (const AffineTerm& t : axis.terms)
      if (std::none_of(loops.begin(), loops.end(), [&](const For* f) { return f->index == t.symbol; })) return false;
  std::vector<std::pair<std::int64_t, std::int64_t>> strides;  // |stride|, extent
  for (const For* f : loops) {
    const std::int64_t extent = f->end - f->begin;
    if (extent <= 1) continue;
    const std::int64_t stride = std::llabs(flat_stride(node, index, f->index));
    if (stride == 0) return false;  // a reduction loop: several iterations per cell
    strides.emplace_back(stride, extent);
  }
  std::sort(strides.begin(), strides.end());
  std::int64_t reach = 0;  // the largest offset difference the smaller strides make
  for (const auto& [stride, extent] : strides) {
    if (stride <= reach) return false;
    reach += stride * (extent - 1);
  }
  return true;
}

// Reads of `node` in `s` other than at `index`.
bool reads_elsewhere(const ScalarRef& s, const TensorNode& node, const std::vector<AxisIndex>& index) {
  bool found = false;
  for_each_scalar(s, [&](const Scalar& x) {
    if (const auto* g = std::get_if<Get>(&x.node); g && g->node->id == node.id && g->index != index) found = true;
    if (const auto* g = std::get_if<GetDynamic>(&x.node); g && g->node->id == node.id) found = true;
  });
  return found;
}

// The value with its reads of d[idx] replaced by d's zero.
struct ReadAsZero : TreeMapper {
  const Set& store;
  explicit ReadAsZero(const Set& s) : store(s) {}
  ScalarRef map_scalar(const ScalarRef& s) override {
    if (const auto* g = std::get_if<Get>(&s->node); g && g->node->id == store.node->id && g->index == store.index)
      return constant(0.0, store.node->dtype);
    return map_children(s);
  }
};

// The nest `s` with d read as zero, when it writes every cell of d exactly once; else nullptr.
StmtRef written_once(const StmtRef& s, const TensorNode& d) {
  const auto nest = as_loop_nest(s);
  if (!nest || nest->store->node->id != d.id || d.is_padded()) return nullptr;
  std::int64_t trips = 1;
  for (const For* f : nest->loops) trips *= std::max<std::int64_t>(0, f->end - f->begin);
  if (trips != d.num_elements() || !one_to_one(d, nest->store->index, nest->loops)) return nullptr;
  if (reads_elsewhere(nest->store->value, d, nest->store->index)) return nullptr;
  return ReadAsZero(*nest->store).map_stmt(s);
}

}  // namespace

LoweredRoutine assign_written_once(const LoweredRoutine& routine) {
  std::vector<StmtRef> stmts = flatten_seq(routine.body);
  bool changed = false;
  for (std::size_t z = 0; z < stmts.size(); ++z) {
    const auto* zero = stmts[z] ? std::get_if<ZeroOut>(&stmts[z]->node) : nullptr;
    if (zero == nullptr) continue;
    const TensorNode& d = *zero->node;
    std::size_t next = z + 1;
    while (next < stmts.size() && !touches(stmts[next], d)) ++next;
    if (next == stmts.size()) continue;
    if (StmtRef rewritten = written_once(stmts[next], d)) {
      stmts[next] = std::move(rewritten);
      stmts[z] = nullptr;
      changed = true;
    }
  }
  if (!changed) return routine;
  std::erase(stmts, nullptr);
  return LoweredRoutine{routine.name, seq(std::move(stmts)), routine.statics};
}

}  // namespace cannl::opt
