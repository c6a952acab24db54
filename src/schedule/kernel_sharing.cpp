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

// A statement's Grid loops from its top (each the whole body of the one before), then its
// thread loops likewise. `whole`: no other hardware loop in the statement.
struct HardwareChain {
  std::vector<const ir::For*> grid, threads;
  bool whole = false;
};

HardwareChain chain_of(const ir::StmtRef& s) {
  HardwareChain c;
  const ir::For* f = std::get_if<ir::For>(&s->node);
  for (; f && f->axis == ir::AxisType::Grid; f = only_loop(f->body)) c.grid.push_back(f);
  for (; f && is_thread_axis(f->axis); f = only_loop(f->body)) c.threads.push_back(f);
  std::size_t hardware = 0;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    const auto* g = std::get_if<ir::For>(&x.node);
    hardware += g && is_hardware_axis(g->axis) ? 1 : 0;
  });
  c.whole = hardware == c.grid.size() + c.threads.size();
  return c;
}

bool same_extents(const std::vector<const ir::For*>& a, const std::vector<const ir::For*>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k]->begin != b[k]->begin || a[k]->end != b[k]->end) return false;
  return true;
}

Access renamed(Access x, const std::map<ir::Symbol, ir::Symbol>& names) {
  for (auto& axis : x.index)
    for (auto& term : axis.terms)
      if (const auto it = names.find(term.symbol); it != names.end()) term.symbol = it->second;
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
  SharingCheck(const ir::LoweredRoutine& routine, const ir::StmtRef& earlier, const ir::StmtRef& later)
      : statics_(symbol_ranges(routine, {})), earlier_(collect_accesses(earlier)), later_(collect_accesses(later)),
        chain_e_(chain_of(earlier)), chain_l_(chain_of(later)) {}

  Sharing run() {
    if (!touches_common_written_cell()) return Sharing::Free;
    if (!chain_e_.whole || !chain_l_.whole || !same_extents(chain_e_.grid, chain_l_.grid)) return Sharing::Separate;
    if (!aligned(chain_e_.grid, chain_l_.grid)) return Sharing::Separate;
    std::vector<const ir::For*> threads_e = chain_e_.grid, threads_l = chain_l_.grid;
    threads_e.insert(threads_e.end(), chain_e_.threads.begin(), chain_e_.threads.end());
    threads_l.insert(threads_l.end(), chain_l_.threads.begin(), chain_l_.threads.end());
    const bool same_threads = same_extents(chain_e_.threads, chain_l_.threads);
    return same_threads && aligned(threads_e, threads_l) ? Sharing::Free : Sharing::WithBarrier;
  }

 private:
  std::map<ir::Symbol, SymbolRange> statics_;
  LoopAccesses earlier_, later_;
  HardwareChain chain_e_, chain_l_;

  bool touches_common_written_cell() const {
    for (const Access& x : earlier_.accesses)
      for (const Access& y : later_.accesses)
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
    std::map<ir::Symbol, SymbolRange> free = earlier_.inner;
    for (const auto& [s, range] : later_.inner) {
      const auto it = names.find(s);
      free[it == names.end() ? s : it->second] = range;
    }
    for (const Access& x : earlier_.accesses)
      for (const Access& y : later_.accesses) {
        if (x.node != y.node || (!x.write && !y.write)) continue;
        if (!forces_equal(x, renamed(y, names), order, statics_, free)) return false;
      }
    return true;
  }
};

}  // namespace

Sharing kernel_sharing(const ir::LoweredRoutine& routine, const ir::StmtRef& earlier, const ir::StmtRef& later) {
  return SharingCheck(routine, earlier, later).run();
}

}  // namespace cannl::schedule::detail
