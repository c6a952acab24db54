// Tracing: structural facts per node (see trace.h). Multiplicities are per-cell read bounds from
// the affine access (semantics-backend.md 4.3 [S]): a read repeats once per iteration of every
// enclosing loop whose symbol its index does not pin.
#include "opt/trace.h"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "cannl/ir/rewrite.h"
#include "opt/provenance.h"

namespace cannl::opt {

using namespace ir;

void for_each_statement(const StmtRef& body, const std::function<void(const StmtRef&)>& f) {
  if (const auto* s = std::get_if<Seq>(&body->node)) {
    for (const auto& c : s->stmts) for_each_statement(c, f);
  } else {
    f(body);
  }
}

StmtRef map_statements(const StmtRef& body, const std::function<StmtRef(const StmtRef&)>& f) {
  const auto* s = std::get_if<Seq>(&body->node);
  if (!s) return f(body);
  std::vector<StmtRef> out;
  for (const auto& c : s->stmts)
    if (auto r = map_statements(c, f)) out.push_back(std::move(r));
  return seq(std::move(out));
}

std::optional<LoopNest> as_loop_nest(const StmtRef& stmt) {
  LoopNest nest;
  const Stmt* at = stmt.get();
  while (const auto* f = std::get_if<For>(&at->node)) {
    nest.loops.push_back(f);
    at = f->body.get();
  }
  nest.store = std::get_if<Set>(&at->node);
  if (!nest.store) return std::nullopt;
  return nest;
}

namespace {

bool is_constexpr(const ScalarRef& s) {
  return std::visit([](const auto& n) {
    using T = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<T, Constant> || std::is_same_v<T, ConstantBits>) return true;
    else if constexpr (std::is_same_v<T, EmbedIndex>) return n.index.is_fixed();
    else if constexpr (std::is_same_v<T, Apply>)
      return std::all_of(n.args.begin(), n.args.end(), is_constexpr);
    else return false;
  }, s->node);
}

/// Cheap to recompute at every read: constants, an index, or a plain copy of another node.
bool is_cheap(const ScalarRef& s) {
  if (is_constexpr(s)) return true;
  return std::holds_alternative<Get>(s->node) || std::holds_alternative<EmbedIndex>(s->node);
}

/// Symbols an index pins (determines from the cell): bare iterators, and per multi-term
/// position the symbol with the largest coefficient.
std::set<Symbol> pinned_symbols(const std::vector<AxisIndex>& idx) {
  std::set<Symbol> pinned;
  for (const auto& i : idx) {
    if (i.terms.empty()) continue;
    const auto best = std::max_element(i.terms.begin(), i.terms.end(), [](auto& a, auto& b) {
      return std::abs(a.coeff) < std::abs(b.coeff);
    });
    pinned.insert(best->symbol);
  }
  return pinned;
}

struct Loop { Symbol symbol; std::int64_t extent; };

class Tracer {
 public:
  explicit Tracer(const LoweredRoutine& r) {
    for (const auto& s : r.statics) statics_.insert(s.symbol);
  }
  Trace run(const StmtRef& body) {
    for_each_statement(body, [this](const StmtRef& s) { statement(s); });
    return std::move(trace_);
  }

 private:
  Trace trace_;
  std::set<Symbol> statics_;
  std::set<int> defined_;
  std::size_t at_ = 0;
  std::vector<Loop> loops_;
  int writer_ = -1;          // node the current statement is an inlinable writer of
  const Set* store_ = nullptr;
  std::set<int> read_here_;  // nodes read by the current statement (self-reads included)

  NodeFacts& facts(const NodeRef& n) {
    auto [it, fresh] = trace_.nodes.try_emplace(n->id);
    if (fresh) {
      it->second.node = n;
      trace_.order.push_back(n->id);
    }
    return it->second;
  }
  static void refuse(NodeFacts& f, int code, std::string why) {
    if (f.not_inlinable != 0) return;
    f.not_inlinable = code;
    f.not_inlinable_why = std::move(why);
  }

  void statement(const StmtRef& s) {
    read_here_.clear();
    writer_ = -1;
    store_ = nullptr;
    if (const auto nest = as_loop_nest(s)) note_nest(s, *nest);
    loops_.clear();
    walk(s, false);
    for (int id : read_here_)
      if (!defined_.contains(id)) trace_.nodes.at(id).recurrent = true;
    note_definitions(s);
    trace_.statements.push_back(s);
    ++at_;
  }

  void note_nest(const StmtRef& s, const LoopNest& nest) {
    NodeFacts& f = facts(nest.store->node);
    writer_ = nest.store->node->id;
    store_ = nest.store;
    std::set<Symbol> free = ir::free_symbols(s);
    for (const auto& st : statics_) free.erase(st);
    if (!free.empty()) refuse(f, provenance::kEscapingSymbol, "its computation uses an unbound symbol");
    const std::set<Symbol> bound = pinned_by_bare(nest.store->index);
    std::int64_t trip = 1;
    for (const For* loop : nest.loops)
      if (!bound.contains(loop->index)) trip *= std::max<std::int64_t>(1, loop->end - loop->begin);
    f.reduction_trip = std::max(f.reduction_trip, trip);
    if (trip > 1 || !is_cheap(nest.store->value)) f.simple = false;
  }

  static std::set<Symbol> pinned_by_bare(const std::vector<AxisIndex>& idx) {
    std::set<Symbol> out;
    for (const auto& i : idx)
      if (i.is_iterator()) out.insert(i.terms[0].symbol);
    return out;
  }

  // A ZeroOut, or a plain store whose loops cover every cell, defines the whole node.
  void note_definitions(const StmtRef& s) {
    if (const auto* z = std::get_if<ZeroOut>(&s->node)) {
      defined_.insert(z->node->id);
      return;
    }
    if (!store_ || read_here_.contains(writer_)) return;
    const auto nest = as_loop_nest(s);
    const NodeRef& n = store_->node;
    std::set<Symbol> used;
    for (std::size_t p = 0; p < store_->index.size(); ++p) {
      const AxisIndex& i = store_->index[p];
      if (i.is_fixed() && i.offset == 0 && n->dims[p] == 1) continue;
      if (!i.is_iterator() || !used.insert(i.terms[0].symbol).second) return;
      const auto loop = std::find_if(nest->loops.begin(), nest->loops.end(),
                                     [&](const For* f) { return f->index == i.terms[0].symbol; });
      if (loop == nest->loops.end() || (*loop)->begin != 0 || (*loop)->end != n->dims[p]) return;
    }
    defined_.insert(n->id);
  }

  std::int64_t multiplicity(const std::vector<AxisIndex>& idx) const {
    const auto pinned = pinned_symbols(idx);
    std::int64_t m = 1;
    for (const auto& l : loops_)
      if (!pinned.contains(l.symbol)) m *= std::max<std::int64_t>(1, l.extent);
    return m;
  }

  void read(const NodeRef& n, const std::vector<AxisIndex>& idx, bool dynamic) {
    NodeFacts& f = facts(n);
    read_here_.insert(n->id);
    if (writer_ >= 0) facts(store_->node).reads_nodes.insert(n->id);
    if (n->id == writer_ && !dynamic) {
      if (idx != store_->index)
        refuse(f, provenance::kIndexTuples, "its computation reads it at another index than it writes");
      return;  // an accumulation reading its own cell
    }
    f.reads.push_back({at_, multiplicity(idx), writer_, dynamic});
    if (dynamic) refuse(f, provenance::kDynamicAccess, "it is read at a run-time row");
  }

  void write(const NodeRef& n, bool in_guard, bool dynamic) {
    NodeFacts& f = facts(n);
    if (f.writers.empty() || f.writers.back() != at_) f.writers.push_back(at_);
    if (dynamic) refuse(f, provenance::kDynamicAccess, "it is written at a run-time row");
    else if (in_guard) refuse(f, provenance::kGuardedSetter, "it is written under a guard");
    else if (n->id != writer_)
      refuse(f, provenance::kNoInlinableSetter, "a write is not a loop nest around one store");
  }

  void scalar(const ScalarRef& s) {
    std::visit([this](const auto& n) {
      using T = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<T, Get>) read(n.node, n.index, false);
      else if constexpr (std::is_same_v<T, GetDynamic>) { read(n.node, n.index, true); scalar(n.dyn_value); }
      else if constexpr (std::is_same_v<T, LocalScope>) walk(n.body, false);
      else if constexpr (std::is_same_v<T, Apply>) { for (const auto& a : n.args) scalar(a); }
    }, s->node);
  }

  void walk(const StmtRef& s, bool in_guard) {
    std::visit([&](const auto& n) {
      using T = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<T, Seq>) { for (const auto& c : n.stmts) walk(c, in_guard); }
      else if constexpr (std::is_same_v<T, For>) {
        loops_.push_back({n.index, n.end - n.begin});
        walk(n.body, in_guard);
        loops_.pop_back();
      } else if constexpr (std::is_same_v<T, ZeroOut>) {
        NodeFacts& f = facts(n.node);
        if (f.writers.empty() || f.writers.back() != at_) f.writers.push_back(at_);
        if (in_guard) refuse(f, provenance::kGuardedSetter, "it is zeroed under a guard");
      } else if constexpr (std::is_same_v<T, Set>) {
        scalar(n.value);
        write(n.node, in_guard, false);
      } else if constexpr (std::is_same_v<T, SetDynamic>) {
        scalar(n.dyn_value);
        scalar(n.value);
        read(n.node, n.index, true);
        write(n.node, in_guard, true);
      } else if constexpr (std::is_same_v<T, SetLocal>) scalar(n.value);
      else if constexpr (std::is_same_v<T, If>) { scalar(n.condition); walk(n.body, true); }
      else if constexpr (std::is_same_v<T, TileMma>) walk(n.fallback, in_guard);
    }, s->node);
  }
};

void finish(Trace& t) {
  for (auto& [id, f] : t.nodes) {
    if (!f.written()) continue;
    bool constexpr_writers = f.node->num_elements() == 1;
    for (std::size_t w : f.writers) {
      if (std::holds_alternative<ZeroOut>(t.statements[w]->node)) continue;
      const auto nest = as_loop_nest(t.statements[w]);
      if (!nest || nest->store->node != f.node || !is_constexpr(nest->store->value))
        constexpr_writers = false;
    }
    f.scalar_constexpr = constexpr_writers && f.not_inlinable == 0;
  }
}

}  // namespace

Trace trace_routine(const LoweredRoutine& routine) {
  Trace t = Tracer(routine).run(routine.body);
  finish(t);
  return t;
}

}  // namespace cannl::opt
