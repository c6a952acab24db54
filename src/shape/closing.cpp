// The staged closing of semantics-frontend.md 3.7: leaves close downward to their GLB (the most
// specific shape their uses demand), unknown leaf dims guess the broadcastable 1, parameters must
// never be guessed, and everything still open closes last.

#include <map>
#include <optional>
#include <set>

#include "shape/errors.h"
#include "shape/solver.h"

namespace cannl::shape {
namespace {

struct TerminalInfo {
  bool is_param = false;
  const Constraint* marker = nullptr;
  RowKind kind = RowKind::Output;
};

/// Everything the closing decisions of one stage look at, computed from the residual constraints.
struct Facts {
  std::map<int, TerminalInfo> terminal_dims, terminal_rows;
  std::map<int, Dim> dim_glb;
  std::map<int, Row> row_glb;
  std::map<int, std::int64_t> at_least;
  std::map<int, const Constraint*> at_least_origin;  // the largest fixed index on the variable
  std::set<int> rows_in_totals, rows_in_ineqs, all_dims, all_rows;
  // Affine / concat: variables the solver derives once the others are known (closed last), and
  // concat parts that may be guessed 0.
  std::set<int> dependent, discardable_parts, relation_inputs;
};

void note_derived(const Constraint& k, Facts& f) {
  const Dim d1 = subst(k.d1);
  for (const Dim* d : {&k.d2, &k.d3})
    if (const Dim v = subst(*d); v.is_var()) f.relation_inputs.insert(v.var);
  for (const auto& p : k.parts)
    if (const Dim v = subst(p); v.is_var()) f.relation_inputs.insert(v.var);
  if (k.kind == ConstraintKind::Concat)
    for (std::size_t i = 0; i < k.parts.size(); ++i)
      if (const Dim p = subst(k.parts[i]); p.is_var() && k.discardable[i]) f.discardable_parts.insert(p.var);
  if (d1.is_var()) return void(f.dependent.insert(d1.var));
  if (k.kind == ConstraintKind::Affine) {
    if (const Dim o = subst(k.d2); o.is_var()) f.dependent.insert(o.var);
    return;
  }
  for (std::size_t i = 0; i < k.parts.size(); ++i) {
    const Dim p = subst(k.parts[i]);
    if (!p.is_var()) continue;
    f.dependent.insert(p.var);
  }
}

Dim merge_dim(const Dim& a, const Dim& b) { return a.same_value(b) ? a : Dim::bcast_one(); }

Row merge_row(const Row& a, const Row& b) {
  const std::size_t n = std::min(a.dims.size(), b.dims.size());
  std::vector<Dim> out(n);
  for (std::size_t i = 1; i <= n; ++i) {
    const Dim& x = a.dims[a.dims.size() - i];
    const Dim& y = b.dims[b.dims.size() - i];
    out[n - i] = (x.is_var() || y.is_var()) ? x : merge_dim(x, y);
  }
  return Row::closed(out);
}

bool same_row(const Row& a, const Row& b) {
  if (a.dims.size() != b.dims.size()) return false;
  for (std::size_t i = 0; i < a.dims.size(); ++i)
    if (!a.dims[i].same_value(b.dims[i])) return false;
  return true;
}

void note_vars(const Row& r0, Facts& f) {
  const Row r = subst(r0);
  if (r.is_open()) f.all_rows.insert(r.var);
  for (const auto& d : r.axes())
    if (d.is_var()) f.all_dims.insert(d.var);
}

bool param_in_use(const Constraint& k) {
  if (!k.is_param || !k.origin || k.origin->shapes.empty() || !k.origin->shapes[0]) return false;
  return state().operand_shapes.count(k.origin->shapes[0]->id) > 0;
}

void note_terminal(const Constraint& k, Facts& f) {
  static constexpr RowKind kinds[] = {RowKind::Batch, RowKind::Input, RowKind::Output};
  for (std::size_t i = 0; i < k.rows.size() && i < 3; ++i) {
    const Row r = subst(k.rows[i]);
    const TerminalInfo info{param_in_use(k), &k, kinds[i]};
    if (r.is_open()) f.terminal_rows.emplace(r.var, info);
    for (const auto& d : r.axes())
      if (d.is_var()) f.terminal_dims.emplace(d.var, info);
  }
}

/// GLBs of dimension variables: solved results flow into operand variables, then along
/// var ⊑ var edges (a worklist; merges only demote, so it terminates).
void compute_dim_glbs(const std::map<std::uint64_t, ConstraintRef>& pending, Facts& f) {
  std::map<int, std::vector<int>> succ;
  std::vector<int> work;
  auto merge_into = [&](int var, const Dim& cand) {
    auto [it, fresh] = f.dim_glb.emplace(var, cand);
    const Dim merged = fresh ? cand : merge_dim(it->second, cand);
    if (fresh || !merged.same_value(it->second)) work.push_back(var);
    it->second = merged;
  };
  for (const auto& [seq, p] : pending) {
    if (p->kind != ConstraintKind::DimIneq) continue;
    const Dim r = subst(p->d1), o = subst(p->d2);
    if (!o.is_var()) continue;
    if (r.is_var()) succ[r.var].push_back(o.var);
    else merge_into(o.var, r);
  }
  while (!work.empty()) {
    const int v = work.back();
    work.pop_back();
    const Dim glb = f.dim_glb.at(v);
    for (int w : succ[v]) merge_into(w, glb);
  }
}

/// An edge `beg·<v>·dims ⊑ <w>` of the row inequality graph.
struct RowEdge {
  int to;
  std::vector<Dim> beg, dims;
};

/// GLBs of row variables: closed results flow into operand variables, then along open-result
/// edges. A result variable with no GLB of its own demands just its explicit axes (it closes
/// empty unless told otherwise) -- assumed first for graph sources, so a GLB arriving later
/// through another edge is not lost to an early guess, then for everything left.
void compute_row_glbs(const std::map<std::uint64_t, ConstraintRef>& pending, Facts& f) {
  std::map<int, std::vector<RowEdge>> succ;
  std::set<int> operand_vars;
  std::vector<int> work;
  auto merge_into = [&](int var, const Row& cand) {
    auto [it, fresh] = f.row_glb.emplace(var, cand);
    const Row merged = fresh ? cand : merge_row(it->second, cand);
    if (fresh || !same_row(merged, it->second)) work.push_back(var);
    it->second = merged;
  };
  auto via = [](const RowEdge& e, const std::vector<Dim>& middle) {
    Row cand = Row::closed(e.beg);
    cand.dims.insert(cand.dims.end(), middle.begin(), middle.end());
    cand.dims.insert(cand.dims.end(), e.dims.begin(), e.dims.end());
    return cand;
  };
  auto drain = [&] {
    while (!work.empty()) {
      const int v = work.back();
      work.pop_back();
      const Row glb = f.row_glb.at(v);
      for (const auto& e : succ[v]) merge_into(e.to, via(e, glb.dims));
    }
  };
  for (const auto& [seq, p] : pending) {
    if (p->kind != ConstraintKind::RowIneq) continue;
    const Row o = subst(p->r2), r = subst(p->r1);
    if (!o.is_open() || !o.beg.empty() || !o.dims.empty()) continue;
    operand_vars.insert(o.var);
    if (r.is_open()) succ[r.var].push_back({o.var, r.beg, r.dims});
    else merge_into(o.var, r);
  }
  drain();
  for (bool sources_only : {true, false}) {
    for (const auto& [v, edges] : succ) {
      if (f.row_glb.count(v) || (sources_only && operand_vars.count(v))) continue;
      for (const auto& e : edges) merge_into(e.to, via(e, {}));
    }
    drain();
  }
}

Facts gather_facts() {
  auto& s = state();
  Facts f;
  for (const auto& [seq, p] : s.pending) {
    const Constraint& k = *p;
    if (k.kind == ConstraintKind::Terminal) note_terminal(k, f);
    if (k.kind == ConstraintKind::Affine || k.kind == ConstraintKind::Concat) note_derived(k, f);
    if (k.kind == ConstraintKind::AtLeast) {
      const Dim d = subst(k.d1);
      if (d.is_var() && k.n > f.at_least[d.var]) f.at_least[d.var] = k.n, f.at_least_origin[d.var] = &k;
    }
    for (const auto& r : k.rows) {
      note_vars(r, f);
      if (k.kind == ConstraintKind::TotalElems && subst(r).is_open()) f.rows_in_totals.insert(subst(r).var);
    }
    for (const auto* r : {&k.r1, &k.r2}) {
      note_vars(*r, f);
      if (k.kind == ConstraintKind::RowIneq && subst(*r).is_open()) f.rows_in_ineqs.insert(subst(*r).var);
    }
    for (const auto* d : {&k.d1, &k.d2, &k.d3})
      if (subst(*d).is_var()) f.all_dims.insert(subst(*d).var);
    for (const auto& d : k.parts)
      if (subst(d).is_var()) f.all_dims.insert(subst(d).var);
  }
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock())
      for (const auto* r : {&sh->batch, &sh->input, &sh->output}) note_vars(*r, f);
  compute_dim_glbs(s.pending, f);
  compute_row_glbs(s.pending, f);
  return f;
}

const char* kind_name(RowKind k) {
  return k == RowKind::Batch ? "batch" : k == RowKind::Input ? "input" : "output";
}

[[noreturn]] void hidden_dimension(const TerminalInfo& info, const std::string& what) {
  const Origin* o = info.marker ? info.marker->origin.get() : nullptr;
  const std::string name = info.marker ? info.marker->param_name : "?";
  shape_fail(o, "You forgot to specify the hidden dimension(s) of parameter '" + name + "': " + what +
                    " of its " + kind_name(info.kind) +
                    " row cannot be inferred from its uses; give them when creating the parameter");
}

/// A parameter row that no use pins to at least one axis must not be guessed empty, unless it
/// is a rank-expansion template or was only used pointwise.
bool must_not_guess(int var, const TerminalInfo& info, const Facts& f) {
  const RowVarInfo ri = row_info(var);
  if (!info.is_param || !ri.used_in_spec || ri.is_template) return false;
  auto it = f.row_glb.find(var);
  return it == f.row_glb.end() || it->second.dims.empty();
}

bool close_terminal_rows_with_glb(const Facts& f) {
  bool any = false;
  for (const auto& [var, info] : f.terminal_rows) {
    auto it = f.row_glb.find(var);
    if (it == f.row_glb.end() || must_not_guess(var, info, f)) continue;
    bind_row(var, it->second);
    any = true;
  }
  return any;
}

/// A leaf axis closes down to what its uses demand; a fixed index beyond that is an error.
void check_dereference(int var, const Dim& glb, const Facts& f) {
  auto least = f.at_least.find(var);
  if (least == f.at_least.end() || glb.is_var() || least->second <= glb.size) return;
  const Constraint* k = f.at_least_origin.at(var);
  shape_fail(k->origin.get(),
             "dereferenced at dimension " + std::to_string(least->second) + ", higher than use site (" +
                 dim_to_string(glb) + "): a fixed index reads past the size the leaf's other uses give it",
             &k->d1);
}

bool close_stage4(const Facts& f) {
  bool any = false;
  for (const auto& [var, info] : f.terminal_dims)
    if (auto it = f.dim_glb.find(var); it != f.dim_glb.end()) {
      check_dereference(var, it->second, f);
      bind_dim(var, it->second), any = true;
    }
  for (const auto& [var, info] : f.terminal_rows) {
    if (must_not_guess(var, info, f)) hidden_dimension(info, "the number of axes");
    if (f.row_glb.count(var) || f.rows_in_totals.count(var)) continue;
    bind_row(var, Row::closed({}));
    any = true;
  }
  return any;
}

bool close_stage5(const Facts& f) {
  bool any = false;
  for (const auto& [var, info] : f.terminal_dims) {
    if (f.dim_glb.count(var) || f.at_least.count(var)) continue;
    if (info.is_param) hidden_dimension(info, "the size of an axis");
    bind_dim(var, Dim::bcast_one());
    any = true;
  }
  return any;
}

bool close_stage6(const Facts& f) {
  bool any = false;
  for (const auto& [var, glb] : f.dim_glb)
    if (!f.terminal_dims.count(var) && !f.at_least.count(var)) bind_dim(var, glb), any = true;
  for (const auto& [var, glb] : f.row_glb)
    if (!f.terminal_rows.count(var)) bind_row(var, glb), any = true;
  if (any) return true;
  for (int var : f.rows_in_ineqs) bind_row(var, Row::closed({})), any = true;
  return any;
}

/// When every remaining dim is determined by a size relation from another (a cycle such as
/// `a^b => a^b`, whose total is known on one side only), one of them must be guessed. A relation
/// input (a concatenation part; the iterated size `o` or the kernel `k` of a strided axis such as
/// `2*o+k`) is guessed rather than what relations derive (a concatenation total, the indexed axis):
/// guessing a part lets the solver derive the other parts and every total from the sizes already
/// known, while guessing a total (the lowest variable id, often the result's concatenation total)
/// contradicts the total known on the other side.
std::optional<int> last_resort_guess(const Facts& f) {
  for (int var : f.dependent)
    if (f.relation_inputs.count(var)) return var;
  if (f.dependent.empty()) return std::nullopt;
  return *f.dependent.begin();
}

bool close_stage7(const Facts& f) {
  bool any = false;
  for (int var : f.discardable_parts) bind_dim(var, Dim::solved(0)), any = true;
  if (any) return true;
  // Inputs of size relations close first, so the sizes they determine are derived rather than
  // guessed by unrelated closing (a pointwise result of a concatenation must not close to 1).
  std::set<int> candidates;
  for (int var : f.relation_inputs)
    if (!f.dependent.count(var)) candidates.insert(var);
  if (candidates.empty())
    for (int var : f.all_dims)
      if (!f.dependent.count(var)) candidates.insert(var);
  if (candidates.empty()) {
    if (auto guess = last_resort_guess(f)) candidates.insert(*guess);
  }
  for (int var : candidates) {
    auto glb = f.dim_glb.find(var);
    auto least = f.at_least.find(var);
    Dim value = Dim::bcast_one();
    if (least != f.at_least.end() && glb == f.dim_glb.end()) value = Dim::solved(least->second);
    if (glb != f.dim_glb.end() && !(least != f.at_least.end() && least->second == 1)) value = glb->second;
    bind_dim(var, value);
    any = true;
  }
  if (any) return true;
  for (int var : f.all_rows) bind_row(var, Row::closed({})), any = true;
  return any;
}

}  // namespace

bool close_stage(int stage) {
  if (stage < 3) return false;
  const Facts f = gather_facts();
  switch (stage) {
    case 3: return close_terminal_rows_with_glb(f);
    case 4: return close_stage4(f);
    case 5: return close_stage5(f);
    case 6: return close_stage6(f);
    default: return close_stage7(f);
  }
}

}  // namespace cannl::shape
