// Affine access relations of a loop body (see access_relations.h).
#include "schedule/access_relations.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::schedule::detail {

namespace {

bool is_accumulate_op(ir::Op op) {
  return op == ir::Op::Add || op == ir::Op::Mul || op == ir::Op::Max || op == ir::Op::Min;
}

bool is_cell(const ir::ScalarRef& s, const ir::NodeRef& node, const std::vector<ir::AxisIndex>& index) {
  const auto* g = s ? std::get_if<ir::Get>(&s->node) : nullptr;
  return g && g->node == node && g->index == index;
}

class Collector {
 public:
  LoopAccesses out;

  void stmt(const ir::StmtRef& s) {
    if (s) std::visit([this](const auto& n) { visit(n); }, s->node);
  }

 private:
  std::vector<ir::ScalarRef> guards_;  // the conditions of the Ifs around, inside the loop
  std::set<int> private_locals_;

  void add(const ir::NodeRef& n, const std::vector<ir::AxisIndex>& idx, bool write, int dyn = -1) {
    out.accesses.push_back({n, idx, dyn, write, false, !guards_.empty(), guards_, -1, std::nullopt});
  }
  void visit(const ir::Seq& q) { for (const auto& x : q.stmts) stmt(x); }
  void visit(const ir::For& f) {
    out.inner[f.index] = {f.begin, f.end - 1, true};
    stmt(f.body);
  }
  void visit(const ir::ZeroOut& z) {
    out.accesses.push_back({z.node, {}, -1, true, true, !guards_.empty(), guards_, -1, std::nullopt});
  }
  void visit(const ir::Set& x) {
    const int reduction = accumulation_op(x.node, x.index, x.value) ? out.reductions++ : -1;
    if (reduction >= 0) accumulation_reads(x, reduction);
    else scalar_values_only(x.value);
    add(x.node, x.index, true);
    out.accesses.back().reduction = reduction;
  }
  // The licensed read of an accumulation is its own cell as an operand of the accumulate op;
  // a read of the cell inside v (d + d * x) is a plain read: re-associating would change it.
  void accumulation_reads(const ir::Set& x, int reduction) {
    for (const ir::ScalarRef& arg : std::get<ir::Apply>(x.value->node).args) {
      if (!is_cell(arg, x.node, x.index)) {
        scalar_values_only(arg);
        continue;
      }
      add(x.node, x.index, false);
      out.accesses.back().reduction = reduction;
    }
  }
  void visit(const ir::SetLocal& x) {
    scalar_values_only(x.value);
    if (!private_locals_.contains(x.scope_id))
      out.shared_local_writes.push_back("local v" + std::to_string(x.scope_id));
  }
  void visit(const ir::DeclareLocal& d) { private_locals_.insert(d.scope_id); }
  void visit(const ir::If& x) {
    scalar_values_only(x.condition);
    guards_.push_back(x.condition);
    if (const ir::SetDynamic* d = only_scatter(x.body)) {
      // Nothing runs between the guard and the scatter: both see the same row.
      scatter(*d, guarded_row_range(x.condition, d->dyn_value));
    } else {
      stmt(x.body);
    }
    guards_.pop_back();
  }
  void visit(const ir::SetDynamic& x) { scatter(x, std::nullopt); }
  void scatter(const ir::SetDynamic& x, const std::optional<RowRange>& rows) {
    scalar_values_only(x.dyn_value);
    scalar_values_only(x.value);
    add(x.node, x.index, false, x.dyn_axis);
    out.accesses.back().dyn_rows = rows;
    add(x.node, x.index, true, x.dyn_axis);
    out.accesses.back().dyn_rows = rows;
  }
  static const ir::SetDynamic* only_scatter(const ir::StmtRef& body) {
    const auto stmts = ir::flatten_seq(body);
    return stmts.size() == 1 ? std::get_if<ir::SetDynamic>(&stmts[0]->node) : nullptr;
  }
  // A tile starting at zero means "zero d whole, then the fallback" (loop_ir.h).
  void visit(const ir::TileMma& t) {
    if (t.zero_start) visit(ir::ZeroOut{t.d.node});
    stmt(t.fallback);
  }
  void visit(const auto&) {}  // Comment, Barrier

  // Gets of a scalar tree, local-scope bodies walked as statements (once).
  void scalar_values_only(const ir::ScalarRef& s) {
    if (!s) return;
    if (const auto* g = std::get_if<ir::Get>(&s->node)) {
      add(g->node, g->index, false);
    } else if (const auto* d = std::get_if<ir::GetDynamic>(&s->node)) {
      scalar_values_only(d->dyn_value);
      add(d->node, d->index, false, d->dyn_axis);
    } else if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) {
      private_locals_.insert(l->scope_id);
      stmt(l->body);
    } else if (const auto* a = std::get_if<ir::Apply>(&s->node)) {
      for (const auto& x : a->args) scalar_values_only(x);
    }
  }
};

}  // namespace

namespace {

struct Interval {
  std::int64_t lo = 0, hi = 0;
  bool known = true;
  void add_scaled(std::int64_t coeff, const SymbolRange& r) {
    if (!r.known) { known = false; return; }
    const std::int64_t a = coeff * r.lo, b = coeff * r.hi;
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
};

std::int64_t coeff_of(const ir::AxisIndex& i, ir::Symbol s) {
  std::int64_t c = 0;
  for (const auto& t : i.terms)
    if (t.symbol == s) c += t.coeff;
  return c;
}

// Range of rest(w) - rest(a) (rest = all but the s term): symbols of `inner` loops vary
// independently per access, other symbols have one value for both.
Interval rest_difference(const ir::AxisIndex& w, const ir::AxisIndex& a, ir::Symbol s,
                         const std::map<ir::Symbol, SymbolRange>& all,
                         const std::map<ir::Symbol, SymbolRange>& inner) {
  Interval out{w.offset - a.offset, w.offset - a.offset, true};
  std::map<ir::Symbol, std::int64_t> shared;
  auto term = [&](const ir::AffineTerm& t, std::int64_t sign) {
    if (t.symbol == s) return;
    if (const auto it = inner.find(t.symbol); it != inner.end()) out.add_scaled(sign * t.coeff, it->second);
    else shared[t.symbol] += sign * t.coeff;
  };
  for (const auto& t : w.terms) term(t, 1);
  for (const auto& t : a.terms) term(t, -1);
  for (const auto& [sym, c] : shared) {
    if (c == 0) continue;
    const auto it = all.find(sym);
    out.add_scaled(c, it == all.end() ? SymbolRange{0, 0, false} : it->second);
  }
  return out;
}

}  // namespace

namespace {

// Both rows bounded by bucket guards, each first + u (u in [0, count) free per access): the
// rests differ by the firsts' rests plus u_w - u_a.
bool rows_separated(const Access& w, const Access& a, ir::Symbol s, const std::map<ir::Symbol, SymbolRange>& all,
                    const std::map<ir::Symbol, SymbolRange>& inner) {
  if (!w.dyn_rows || !a.dyn_rows || w.dyn_axis != a.dyn_axis) return false;
  const std::int64_t c = coeff_of(w.dyn_rows->first, s);
  if (c == 0 || c != coeff_of(a.dyn_rows->first, s)) return false;
  Interval diff = rest_difference(w.dyn_rows->first, a.dyn_rows->first, s, all, inner);
  diff.lo -= a.dyn_rows->count - 1;
  diff.hi += w.dyn_rows->count - 1;
  return diff.known && diff.lo > -std::abs(c) && diff.hi < std::abs(c);
}

}  // namespace

bool separated_by(const Access& w, const Access& a, ir::Symbol s,
                  const std::map<ir::Symbol, SymbolRange>& all,
                  const std::map<ir::Symbol, SymbolRange>& inner) {
  if (w.whole_node || a.whole_node) return false;
  if (rows_separated(w, a, s, all, inner)) return true;
  for (std::size_t d = 0; d < w.index.size() && d < a.index.size(); ++d) {
    if (static_cast<int>(d) == w.dyn_axis || static_cast<int>(d) == a.dyn_axis) continue;
    const std::int64_t c = coeff_of(w.index[d], s);
    if (c == 0 || c != coeff_of(a.index[d], s)) continue;
    const Interval diff = rest_difference(w.index[d], a.index[d], s, all, inner);
    if (diff.known && diff.lo > -std::abs(c) && diff.hi < std::abs(c)) return true;
  }
  return false;
}

namespace {

// The bounds `index < bound` that `guard` is a conjunction of, or nullopt for any other form.
std::optional<std::vector<std::pair<ir::AxisIndex, std::int64_t>>> index_bounds(const ir::ScalarRef& guard) {
  const auto* a = std::get_if<ir::Apply>(&guard->node);
  if (a == nullptr || a->args.size() != 2) return std::nullopt;
  if (a->op == ir::Op::And) {
    auto left = index_bounds(a->args[0]);
    const auto right = index_bounds(a->args[1]);
    if (!left || !right) return std::nullopt;
    left->insert(left->end(), right->begin(), right->end());
    return left;
  }
  const auto* index = std::get_if<ir::EmbedIndex>(&a->args[0]->node);
  const auto* bound = std::get_if<ir::Constant>(&a->args[1]->node);
  if (a->op != ir::Op::Cmplt || index == nullptr || bound == nullptr) return std::nullopt;
  return std::vector<std::pair<ir::AxisIndex, std::int64_t>>{{index->index, static_cast<std::int64_t>(bound->value)}};
}

// Whether some two iterations of `s` run both `w` and `a` with every other symbol alike: each
// guard is a bound `index < c`, so every symbol is set where the indices are least (its low
// end where its coefficients are positive, its high end where negative; a symbol with both
// signs gives up), and `s` at its least and next least value for `w` and `a`.
bool both_run_twice(const Access& w, const Access& a, ir::Symbol s, const SymbolRange& s_range,
                    const std::map<ir::Symbol, SymbolRange>& all, const std::map<ir::Symbol, SymbolRange>& inner) {
  std::vector<std::pair<ir::AxisIndex, std::int64_t>> bounds_w, bounds_a;
  for (const auto& [access, bounds] : {std::pair{&w, &bounds_w}, std::pair{&a, &bounds_a}})
    for (const ir::ScalarRef& g : access->guards) {
      const auto b = index_bounds(g);
      if (!b) return false;
      bounds->insert(bounds->end(), b->begin(), b->end());
    }
  std::map<ir::Symbol, int> sign;  // +1, -1, 0: mixed
  for (const auto* bounds : {&bounds_w, &bounds_a})
    for (const auto& [index, c] : *bounds)
      for (const ir::AffineTerm& t : index.terms) {
        const int sg = t.coeff > 0 ? 1 : -1;
        const auto [at, fresh] = sign.emplace(t.symbol, sg);
        if (!fresh && at->second != sg) at->second = 0;
      }
  std::map<ir::Symbol, std::int64_t> value;
  for (const auto& [sym, sg] : sign) {
    if (sg == 0 || sym == s) continue;
    const auto in = inner.find(sym);
    const auto out = all.find(sym);
    const SymbolRange r = in != inner.end() ? in->second : out != all.end() ? out->second : SymbolRange{0, 0, false};
    if (!r.known) return false;
    value[sym] = sg > 0 ? r.lo : r.hi;
  }
  if (sign.count(s) != 0 && sign[s] == 0) return false;
  const bool descending = sign.count(s) != 0 && sign[s] < 0;
  const std::int64_t first = descending ? s_range.hi : s_range.lo, second = descending ? first - 1 : first + 1;
  const auto hold = [&](const std::vector<std::pair<ir::AxisIndex, std::int64_t>>& bounds, std::int64_t at) {
    for (const auto& [index, c] : bounds) {
      std::int64_t v = index.offset;
      for (const ir::AffineTerm& t : index.terms) {
        if (t.symbol != s && value.count(t.symbol) == 0) return false;  // a symbol of mixed signs
        v += t.coeff * (t.symbol == s ? at : value.at(t.symbol));
      }
      if (v >= c) return false;
    }
    return true;
  };
  return hold(bounds_w, first) && hold(bounds_a, second);
}

}  // namespace

bool proven_conflict(const Access& w, const Access& a, ir::Symbol s, const SymbolRange& s_range,
                     const std::map<ir::Symbol, SymbolRange>& all,
                     const std::map<ir::Symbol, SymbolRange>& inner) {
  if (!s_range.known || s_range.hi <= s_range.lo) return false;
  if (!w.whole_node && !a.whole_node) {
    if (w.dyn_axis >= 0 || a.dyn_axis >= 0 || w.index != a.index) return false;
    for (const auto& i : w.index)
      if (i.mentions(s)) return false;
  }
  // The same cell in every iteration, reached in two of them.
  return (!w.guarded && !a.guarded) || both_run_twice(w, a, s, s_range, all, inner);
}

std::optional<ir::Op> accumulation_op(const ir::NodeRef& node, const std::vector<ir::AxisIndex>& index,
                                      const ir::ScalarRef& value) {
  const auto* a = value ? std::get_if<ir::Apply>(&value->node) : nullptr;
  if (!a) return std::nullopt;
  if (is_accumulate_op(a->op) && a->args.size() == 2 &&
      (is_cell(a->args[0], node, index) != is_cell(a->args[1], node, index)))
    return a->op;
  if (a->op == ir::Op::Fma && a->args.size() == 3 && is_cell(a->args[2], node, index) &&
      !is_cell(a->args[0], node, index) && !is_cell(a->args[1], node, index))
    return ir::Op::Add;
  // d - v (a gradient of a subtraction summed over a row): the sum d + (-v), which rounds
  // exactly like it; v - d is no accumulation.
  if (a->op == ir::Op::Sub && a->args.size() == 2 && is_cell(a->args[0], node, index) &&
      !is_cell(a->args[1], node, index))
    return ir::Op::Sub;
  return std::nullopt;
}

LoopAccesses collect_accesses(const ir::StmtRef& body) {
  Collector c;
  c.stmt(body);
  return c.out;
}

std::map<ir::Symbol, SymbolRange> symbol_ranges(const ir::LoweredRoutine& routine,
                                                const std::vector<const ir::For*>& enclosing) {
  std::map<ir::Symbol, SymbolRange> out;
  for (const auto& s : routine.statics)
    out[s.symbol] = s.range > 0 ? SymbolRange{0, s.range - 1, true} : SymbolRange{0, 0, false};
  for (const ir::For* f : enclosing) out[f->index] = {f->begin, f->end - 1, true};
  return out;
}

}  // namespace cannl::schedule::detail
