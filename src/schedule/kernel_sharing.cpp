// Whether two parallel statements may share a kernel (see kernel_sharing.h). The later
// statement's hardware loops are renamed to the earlier's, position by position; then equal
// cells must force equal hardware indices. The indices are proven equal outermost first: with
// the ones before proven equal (one value for both accesses) and the ones after free, an axis
// c*s + rest separates s when every difference of the rests lies inside (-|c|, |c|) (the
// legality oracle's test, access_relations.h).
#include "schedule/kernel_sharing.h"

#include <map>

#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"

namespace cannl::schedule::detail {

namespace {

bool is_thread_axis(ir::AxisType a) { return a == ir::AxisType::Workgroup || a == ir::AxisType::WorkgroupReduce; }
bool is_hardware_axis(ir::AxisType a) { return a == ir::AxisType::Grid || is_thread_axis(a); }

// The loop that is the whole of `body`, looking through guards (a Split's remainder If).
const ir::For* only_loop(const ir::StmtRef& body) {
  const auto stmts = ir::flatten_seq(body);
  if (stmts.size() != 1) return nullptr;
  if (const auto* i = std::get_if<ir::If>(&stmts[0]->node)) return only_loop(i->body);
  return std::get_if<ir::For>(&stmts[0]->node);
}

bool same_extents(const std::vector<const ir::For*>& a, const std::vector<const ir::For*>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k]->begin != b[k]->begin || a[k]->end != b[k]->end) return false;
  return true;
}

Access renamed(Access x, const std::map<ir::Symbol, ir::Symbol>& names) {
  const auto rename = [&](ir::AxisIndex& axis) {
    for (auto& term : axis.terms)
      if (const auto it = names.find(term.symbol); it != names.end()) term.symbol = it->second;
  };
  for (auto& axis : x.index) rename(axis);
  if (x.dyn_rows) rename(x.dyn_rows->first);
  return x;
}

// Equal cells of x and y force equal values of every symbol of `order` (outermost first).
bool forces_equal(const Access& x, const Access& y, const std::vector<ir::Symbol>& order,
                  std::map<ir::Symbol, SymbolRange> fixed, std::map<ir::Symbol, SymbolRange> free) {
  for (const ir::Symbol s : order) {
    if (!separated_by(x, y, s, fixed, free)) return false;
    fixed[s] = free.at(s);
    free.erase(s);
  }
  return true;
}

class SharingCheck {
 public:
  SharingCheck(const ir::LoweredRoutine& routine, const StatementFacts& earlier, const StatementFacts& later)
      : statics_(symbol_ranges(routine, {})), e_(earlier), l_(later) {}

  Sharing run() {
    if (!touches_common_written_cell()) return Sharing::Free;
    if (!e_.whole || !l_.whole || !same_extents(e_.grid, l_.grid)) return Sharing::Separate;
    if (!aligned(e_.grid, l_.grid)) return Sharing::Separate;
    std::vector<const ir::For*> threads_e = e_.grid, threads_l = l_.grid;
    threads_e.insert(threads_e.end(), e_.threads.begin(), e_.threads.end());
    threads_l.insert(threads_l.end(), l_.threads.begin(), l_.threads.end());
    const bool same_threads = same_extents(e_.threads, l_.threads) && !e_.reduces && !l_.reduces;
    return same_threads && aligned(threads_e, threads_l) ? Sharing::Free : Sharing::WithBarrier;
  }

 private:
  std::map<ir::Symbol, SymbolRange> statics_;
  const StatementFacts& e_;
  const StatementFacts& l_;

  bool touches_common_written_cell() const {
    for (const Access& x : e_.accesses.accesses)
      for (const Access& y : l_.accesses.accesses)
        if (x.node == y.node && (x.write || y.write)) return true;
    return false;
  }

  // Every access pair to a node one of them writes reaches a cell only from equal indices of
  // the loops `e` (earlier) and `l` (later, renamed to e's).
  bool aligned(const std::vector<const ir::For*>& e, const std::vector<const ir::For*>& l) const {
    std::map<ir::Symbol, ir::Symbol> names;
    std::vector<ir::Symbol> order;
    for (std::size_t k = 0; k < e.size(); ++k) {
      names[l[k]->index] = e[k]->index;
      order.push_back(e[k]->index);
    }
    // Every loop of either statement varies on its own; renamed loops have equal ranges.
    std::map<ir::Symbol, SymbolRange> free = e_.accesses.inner;
    for (const auto& [s, range] : l_.accesses.inner) {
      const auto it = names.find(s);
      free[it == names.end() ? s : it->second] = range;
    }
    for (const Access& x : e_.accesses.accesses)
      for (const Access& y : l_.accesses.accesses) {
        if (x.node != y.node || (!x.write && !y.write)) continue;
        if (!forces_equal(x, renamed(y, names), order, statics_, free)) return false;
      }
    return true;
  }
};

}  // namespace

StatementFacts statement_facts(const ir::StmtRef& stmt) {
  StatementFacts facts;
  facts.accesses = collect_accesses(stmt);
  const ir::For* f = std::get_if<ir::For>(&stmt->node);
  for (; f && f->axis == ir::AxisType::Grid; f = only_loop(f->body)) facts.grid.push_back(f);
  for (; f && is_thread_axis(f->axis); f = only_loop(f->body)) facts.threads.push_back(f);
  std::size_t hardware = 0;
  ir::for_each_stmt(stmt, [&](const ir::Stmt& x) {
    const auto* g = std::get_if<ir::For>(&x.node);
    hardware += g && is_hardware_axis(g->axis) ? 1 : 0;
    facts.reduces = facts.reduces || (g && g->axis == ir::AxisType::WorkgroupReduce);
  });
  facts.whole = hardware == facts.grid.size() + facts.threads.size();
  return facts;
}

Sharing kernel_sharing(const ir::LoweredRoutine& routine, const StatementFacts& earlier, const StatementFacts& later) {
  return SharingCheck(routine, earlier, later).run();
}

}  // namespace cannl::schedule::detail
