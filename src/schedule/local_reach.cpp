// Which threads hold a local's value (see local_reach.h).
#include "schedule/local_reach.h"

#include <array>
#include <map>
#include <vector>

#include "cannl/ir/tree_mapper.h"

namespace cannl::schedule::detail {

namespace {

// The threads of one block slot a statement runs on.
enum class Threads { Every, First, Own };  // Own: each thread its own iterations of `loop`
struct Place {
  Threads threads = Threads::Every;
  const ir::For* loop = nullptr;  // the thread loop giving each thread its own iterations
};
using Reach = std::array<Place, 3>;

struct Access {
  Reach reach;
  ir::StmtRef stmt;
  std::size_t top;  // the index of the kernel's top-level statement holding it
};

class LocalReach {
 public:
  LocalReach(const ir::KernelGeometry& g, const std::set<int>& locals) : geometry_(g), locals_(locals) {}

  void walk_kernel(const ir::StmtRef& body) {
    const auto stmts = ir::flatten_seq(body);
    for (top_ = 0; top_ < stmts.size(); ++top_) walk(stmts[top_], {});
  }

  // A setter reaches the reads after it, and those before it in its own top-level statement
  // (a loop around both runs it again).
  void walk(const ir::StmtRef& s, Reach reach) {
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts) walk(x, reach);
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      ir::for_each_scalar(i->condition, [&](const ir::Scalar& x) { note_read(x, reach, s); });
      walk(i->body, reach);
    } else if (const auto* f = std::get_if<ir::For>(&s->node)) {
      walk(f->body, inside(*f, reach));
    } else {
      if (const auto* l = std::get_if<ir::SetLocal>(&s->node); l && locals_.contains(l->scope_id))
        setters_[l->scope_id].push_back({reach, s, top_});
      ir::for_each_scalar(s, [&](const ir::Scalar& x) { note_read(x, reach, s); });
    }
  }

  std::string first_unsound() const {
    for (const auto& [local, setters] : setters_) {
      for (const Access& set : setters) {
        const auto readers = readers_.find(local);
        if (readers == readers_.end()) continue;
        for (const Access& read : readers->second)
          if (set.top <= read.top && !covers(set.reach, read.reach)) return ir::print_stmt(read.stmt);
      }
    }
    return "";
  }

 private:
  const ir::KernelGeometry& geometry_;
  const std::set<int>& locals_;
  std::map<int, std::vector<Access>> setters_, readers_;
  std::size_t top_ = 0;

  // The threads running a loop's body: a thread loop of one iteration runs on its slot's first
  // thread; a longer one (or a block reduction, a tree or the first thread) gives each its own.
  Reach inside(const ir::For& f, Reach reach) const {
    const auto slot = geometry_.slot_of.find(f.index.id);
    const bool thread = f.axis == ir::AxisType::Workgroup || f.axis == ir::AxisType::WorkgroupReduce;
    if (!thread || slot == geometry_.slot_of.end()) return reach;
    const auto d = static_cast<std::size_t>(slot->second);
    if (geometry_.block[d] == 1) return reach;  // the slot's one thread is every thread
    const bool first = f.axis == ir::AxisType::Workgroup && f.end - f.begin == 1;
    if (reach[d].threads == Threads::Own) return reach;
    reach[d] = first ? Place{Threads::First, nullptr} : Place{Threads::Own, &f};
    return reach;
  }

  void note_read(const ir::Scalar& x, const Reach& reach, const ir::StmtRef& stmt) {
    const auto* g = std::get_if<ir::GetLocal>(&x.node);
    if (g && locals_.contains(g->scope_id)) readers_[g->scope_id].push_back({reach, stmt, top_});
  }

  // Whether threads that ran a setter (reaching `set`) include every thread of a read, per slot:
  // a setter on every thread covers any read; one on the first thread, a read there; one in a
  // thread loop, a read in the same loop's body (the same iteration's thread: a per-iteration
  // temporary), not one after it (there each thread holds its own iteration's value).
  static bool covers(const Reach& set, const Reach& read) {
    for (std::size_t d = 0; d < 3; ++d) {
      const bool covered = set[d].threads == Threads::Every ||
                           (set[d].threads == Threads::First && read[d].threads == Threads::First) ||
                           (set[d].threads == Threads::Own && read[d].loop == set[d].loop);
      if (!covered) return false;
    }
    return true;
  }
};

}  // namespace

std::string first_read_without_its_local(const ir::StmtRef& body, const ir::KernelGeometry& g,
                                         const std::set<int>& locals) {
  LocalReach reach(g, locals);
  reach.walk_kernel(body);
  return reach.first_unsound();
}

}  // namespace cannl::schedule::detail
