// Inlining of one read of a virtual node (see inline.h).
#include "opt/inline.h"

#include <map>
#include <set>

#include "cannl/ir/rewrite.h"
#include "opt/trace.h"

namespace cannl::opt {

using namespace ir;

namespace {

ScalarRef index_value(const AxisIndex& i) { return embed_index(i); }

ScalarRef equal_guard(const AxisIndex& a, const AxisIndex& b) {
  return apply(Op::Cmpeq, DType::I64, {index_value(a), index_value(b)});
}

/// begin <= x < end, checking only the bounds that an in-bounds x ([0, dim)) may break; plain
/// comparisons, no subtraction, so no operand can wrap.
ScalarRef range_guard(const AxisIndex& x, std::int64_t begin, std::int64_t end, std::int64_t dim) {
  std::vector<ScalarRef> parts;
  if (begin > 0)
    parts.push_back(apply(Op::Not, DType::I64, {apply(Op::Cmplt, DType::I64,
                                                      {index_value(x), constant(double(begin), DType::I64)})}));
  if (end < dim)
    parts.push_back(apply(Op::Cmplt, DType::I64, {index_value(x), constant(double(end), DType::I64)}));
  ScalarRef out = parts.front();
  for (std::size_t k = 1; k < parts.size(); ++k) out = apply(Op::And, DType::I64, {out, parts[k]});
  return out;
}

ScalarRef conjunction(const std::vector<ScalarRef>& guards) {
  ScalarRef out = guards.front();
  for (std::size_t k = 1; k < guards.size(); ++k) out = apply(Op::And, DType::I64, {out, guards[k]});
  return out;
}

/// Replays one writer nest for the cell `call`: a statement, nullptr when the writer never writes
/// that cell, or nullopt when it cannot be replayed.
std::optional<StmtRef> replay_writer(const LoopNest& nest, const NodeRef& node,
                                     const std::vector<AxisIndex>& call, int id) {
  const Set& store = *nest.store;
  if (store.index.size() != call.size()) return std::nullopt;
  std::map<Symbol, const For*> loop_of;
  for (const For* f : nest.loops) loop_of[f->index] = f;
  ir::Replay replay;
  replay.redirect_self(node, id, node->dtype);
  std::set<Symbol> bound;
  std::vector<bool> done(call.size(), false);
  std::vector<ScalarRef> guards;
  for (std::size_t p = 0; p < call.size(); ++p) {
    const AxisIndex& lhs = store.index[p];
    if (!lhs.is_iterator()) continue;
    const Symbol s = lhs.terms[0].symbol;
    const auto loop = loop_of.find(s);
    if (loop == loop_of.end() || !bound.insert(s).second) continue;
    replay.bind(s, call[p]);
    done[p] = true;
    const For& f = *loop->second;
    if (f.begin > 0 || f.end < node->dims[p]) guards.push_back(range_guard(call[p], f.begin, f.end, node->dims[p]));
  }
  std::vector<std::pair<Symbol, const For*>> kept;
  for (const For* f : nest.loops)
    if (!bound.contains(f->index)) kept.emplace_back(replay.freshen(f->index), f);
  for (std::size_t p = 0; p < call.size(); ++p) {
    if (done[p]) continue;
    const AxisIndex lhs = replay.index({store.index[p]})[0];
    if (lhs == call[p]) continue;
    if (lhs.is_fixed() && call[p].is_fixed()) return StmtRef{};  // never this cell
    guards.push_back(equal_guard(lhs, call[p]));
  }
  StmtRef body = set_local(id, replay.scalar(store.value));
  if (!guards.empty()) body = if_then(conjunction(guards), body);
  for (auto it = kept.rbegin(); it != kept.rend(); ++it)
    body = for_loop(it->first, it->second->begin, it->second->end, body);
  return body;
}

}  // namespace

std::optional<ScalarRef> inline_computation(const Computation& comp,
                                            const std::vector<AxisIndex>& call_index) {
  if (comp.writers.empty() || call_index.size() != comp.node->dims.size()) return std::nullopt;
  const int id = fresh_scope_id();
  const DType dtype = comp.node->dtype;
  std::vector<StmtRef> body;
  for (const auto& w : comp.writers) {
    if (std::holds_alternative<ZeroOut>(w->node)) {
      body.clear();  // everything before is overwritten
      body.push_back(set_local(id, constant(0, dtype)));
      continue;
    }
    const auto nest = as_loop_nest(w);
    if (!nest || nest->store->node != comp.node) return std::nullopt;
    const auto replayed = replay_writer(*nest, comp.node, call_index, id);
    if (!replayed) return std::nullopt;
    if (*replayed) body.push_back(*replayed);
  }
  return local_scope(id, dtype, seq(std::move(body)));
}

}  // namespace cannl::opt
