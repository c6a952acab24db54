// The global inference environment and substitution of solved variables (semantics 3.9, item 2).

#include "shape/state.h"

#include "cannl/support/error.h"

namespace cannl::shape {

State& state() {
  static State s;
  return s;
}

int fresh_var() { return state().next_var++; }

void add_pending(ConstraintRef k, bool process) {
  auto& s = state();
  const std::uint64_t seq = s.next_seq++;
  if (s.trail.active) s.trail.pending_log.emplace_back(seq, nullptr);
  if (process) s.worklist.push_back(seq);
  else
    for (int v : k->watch) s.watchers[v].push_back(seq);
  s.pending.emplace(seq, std::move(k));
}

ConstraintRef take_pending(std::uint64_t seq) {
  auto& s = state();
  auto it = s.pending.find(seq);
  if (it == s.pending.end()) return nullptr;
  ConstraintRef k = std::move(it->second);
  s.pending.erase(it);
  if (s.trail.active) s.trail.pending_log.emplace_back(seq, k);
  return k;
}

void wake(int var) {
  auto& s = state();
  auto it = s.watchers.find(var);
  if (it == s.watchers.end()) return;
  for (auto seq : it->second) s.worklist.push_back(seq);
  s.watchers.erase(it);
}

void rebuild_watchers() {
  auto& s = state();
  s.watchers.clear();
  s.worklist.clear();
  for (const auto& [seq, k] : s.pending)
    for (int v : k->watch) s.watchers[v].push_back(seq);
}

Snapshot begin_step() {
  auto& s = state();
  s.trail = State::Trail{};
  s.trail.active = true;
  return {s.next_var, {}};
}

void end_step() { state().trail = State::Trail{}; }

void restore(Snapshot snap) {
  auto& s = state();
  for (int v : s.trail.dims) s.dim_solution.erase(v);
  for (int v : s.trail.rows) s.row_solution.erase(v);
  for (auto it = s.trail.infos.rbegin(); it != s.trail.infos.rend(); ++it) {
    if (it->second) s.row_info[it->first] = *it->second;
    else s.row_info.erase(it->first);
  }
  auto& log = s.trail.pending_log;
  for (auto it = log.rbegin(); it != log.rend(); ++it) {
    if (it->second) s.pending[it->first] = it->second;
    else s.pending.erase(it->first);
  }
  rebuild_watchers();
  s.next_var = snap.next_var;
  for (int id : snap.added_operands) s.operand_shapes.erase(id);
  end_step();
}

bool is_bound(int var) {
  const auto& s = state();
  return s.dim_solution.count(var) > 0 || s.row_solution.count(var) > 0;
}

RowVarInfo& update_row_info(int var) {
  auto& s = state();
  auto it = s.row_info.find(var);
  if (s.trail.active)
    s.trail.infos.emplace_back(var, it == s.row_info.end() ? std::nullopt : std::optional(it->second));
  return it == s.row_info.end() ? s.row_info[var] : it->second;
}

RowVarInfo row_info(int var) {
  const auto& s = state();
  auto it = s.row_info.find(var);
  return it == s.row_info.end() ? RowVarInfo{} : it->second;
}

namespace {

/// Path compression: point a bound variable straight at its fully substituted value. Only
/// outside a propagate call, whose undo trail could otherwise leave a stale shortcut.
bool may_compress() { return !state().trail.active; }

}  // namespace

Dim subst(const Dim& d) {
  Dim out = d;
  auto& solutions = state().dim_solution;
  // Chains are acyclic (a variable is never bound to itself), so this terminates.
  while (out.is_var()) {
    auto it = solutions.find(out.var);
    if (it == solutions.end()) break;
    const int step = out.label_step, pos = out.label_pos;
    out = it->second;
    if (out.is_var() && may_compress()) {
      const Dim final_value = subst(Dim::variable(out.var));
      it->second = final_value;
      out = final_value;
    }
    if (pos >= 0) {  // keep where the occurrence was written, for error carets
      out.label_step = step;
      out.label_pos = pos;
    }
  }
  return out;
}

Row subst(const Row& r) {
  Row out;
  for (const auto& d : r.beg) out.beg.push_back(subst(d));
  for (const auto& d : r.dims) out.dims.push_back(subst(d));
  int v = r.var;
  auto& solutions = state().row_solution;
  if (v >= 0 && may_compress()) {
    auto it = solutions.find(v);
    if (it != solutions.end() && it->second.is_open() && solutions.count(it->second.var)) {
      it->second = subst(it->second);  // compress the chain behind v once
      return subst(r);
    }
  }
  for (int guard = 0; v >= 0; ++guard) {
    internal_check(guard < 1000000, "row substitution does not terminate");
    auto it = solutions.find(v);
    if (it == solutions.end()) break;
    const Row& s = it->second;
    for (const auto& d : s.beg) out.beg.push_back(subst(d));
    std::vector<Dim> tail;
    for (const auto& d : s.dims) tail.push_back(subst(d));
    out.dims.insert(out.dims.begin(), tail.begin(), tail.end());
    v = s.var;
  }
  out.var = v;
  if (v < 0 && !out.beg.empty()) {
    out.beg.insert(out.beg.end(), out.dims.begin(), out.dims.end());
    out.dims = std::move(out.beg);
    out.beg.clear();
  }
  return out;
}

void write_back(Shape& shape) {
  shape.batch = subst(shape.batch);
  shape.input = subst(shape.input);
  shape.output = subst(shape.output);
}

void write_back_step(const UpdateStep& step) {
  write_back(*step.result);
  for (const auto& o : step.operands) write_back(*o);
}

}  // namespace cannl::shape
