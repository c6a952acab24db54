// The GPU kernel race checker (see race_check.h).
#include "cannl/interp/race_check.h"

#include <type_traits>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/tree_mapper.h"

namespace cannl::interp {

bool race_checkable(const ir::StmtRef& body) {
  bool blocked_tile = false;
  ir::for_each_stmt(body, [&](const ir::Stmt& x) {
    const auto* t = std::get_if<ir::TileMma>(&x.node);
    blocked_tile = blocked_tile || (t && t->blocking.blocked());
  });
  return !blocked_tile;
}

KernelRaceCheck::KernelRaceCheck(ir::KernelGeometry geometry, const ir::StmtRef& body) : g_(std::move(geometry)) {
  if (body) find_reductions(body, 0);
}

// Classifies each WorkgroupReduce loop as the GPU printer renders it: cooperative in the block
// reduction form where every thread of the block reaches it; serially on the first thread under an
// If whose condition may differ between the block's threads (ir::same_in_every_thread), under a
// thread loop that leaves some of its slot's threads idle, or in another reduction run serially
// (`divergence` counts those places around `stmt`).
void KernelRaceCheck::find_reductions(const ir::StmtRef& stmt, int divergence) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ir::Seq>) {
          for (const auto& x : n.stmts) find_reductions(x, divergence);
        } else if constexpr (std::is_same_v<T, ir::If>) {
          find_reductions(n.condition, divergence);
          find_reductions(n.body, divergence + (ir::same_in_every_thread(n.condition, thread_indices_) ? 0 : 1));
        } else if constexpr (std::is_same_v<T, ir::For>) {
          int inner = divergence;
          const auto slot = g_.slot_of.find(n.index.id);
          if (n.axis == ir::AxisType::WorkgroupReduce) {
            const auto form = ir::block_reduction(n);
            Reduction r{form.has_value() && divergence == 0, form ? form->target->id : -1};
            reductions_[&n] = r;
            if (!r.cooperative) ++inner;
          } else if (n.axis == ir::AxisType::Workgroup && slot != g_.slot_of.end() &&
                     n.end < g_.block[static_cast<std::size_t>(slot->second)]) {
            ++inner;  // the slot's threads past the loop's end skip its body
          }
          const bool thread_loop = n.axis == ir::AxisType::Workgroup || n.axis == ir::AxisType::WorkgroupReduce;
          if (thread_loop) thread_indices_.insert(n.index);
          find_reductions(n.body, inner);
          if (thread_loop) thread_indices_.erase(n.index);
        } else if constexpr (std::is_same_v<T, ir::Set>) {
          find_reductions(n.value, divergence);
        } else if constexpr (std::is_same_v<T, ir::SetLocal>) {
          find_reductions(n.value, divergence);
        } else if constexpr (std::is_same_v<T, ir::SetDynamic>) {
          find_reductions(n.dyn_value, divergence);
          find_reductions(n.value, divergence);
        }
      },
      stmt->node);
}

// Local scopes' bodies run where the expression holding them is evaluated.
void KernelRaceCheck::find_reductions(const ir::ScalarRef& scalar, int divergence) {
  if (!scalar) return;
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ir::LocalScope>) {
          find_reductions(n.body, divergence);
        } else if constexpr (std::is_same_v<T, ir::Apply>) {
          for (const auto& a : n.args) find_reductions(a, divergence);
        } else if constexpr (std::is_same_v<T, ir::GetDynamic>) {
          find_reductions(n.dyn_value, divergence);
        }
      },
      scalar->node);
}

void KernelRaceCheck::iteration(const ir::For& loop, std::int64_t index) {
  forget_reads();  // a read flows into what its own expression or iteration writes
  const auto [slots, s] = slot_of(loop);
  if (slots == nullptr) return;
  bool serial_reduction = false;  // its body runs on the slot's first thread only
  if (const auto r = reductions_.find(&loop); r != reductions_.end()) {
    serial_reduction = !r->second.cooperative;
    if (serial_reduction) index = 0;  // every step on the slot's first thread
    if (r->second.cooperative && reducing_ == nullptr) {
      reducing_ = &loop;
      reducing_target_ = r->second.target;
    }
  }
  if (slots == &now_.thread && (*slots)[s] == kAll && (loop.end < g_.block[s] || (serial_reduction && g_.block[s] > 1)))
    short_thread_loops_.push_back(&loop);
  (*slots)[s] = index;
  if (slots == &now_.block) now_epoch_ = epoch(now_.block);
}

void KernelRaceCheck::loop_done(const ir::For& loop) {
  forget_reads();
  const auto [slots, s] = slot_of(loop);
  if (slots == nullptr) return;
  (*slots)[s] = kAll;
  if (slots == &now_.block) now_epoch_ = epoch(now_.block);
  if (!short_thread_loops_.empty() && short_thread_loops_.back() == &loop) short_thread_loops_.pop_back();
  if (reducing_ == &loop) finish_reduction(loop);
}

// The end of a cooperative reduction as rendered: a barrier (after each thread stored its step),
// the tree, the slot's first thread accumulating the total, and a barrier after it.
void KernelRaceCheck::finish_reduction(const ir::For& loop) {
  reducing_ = nullptr;
  std::vector<Deferred> accesses = std::move(deferred_);
  deferred_.clear();
  barrier();
  const auto [slots, s] = slot_of(loop);
  (*slots)[s] = 0;
  for (const Deferred& a : accesses) record(*a.node, a.element, a.write);
  (*slots)[s] = kAll;
  barrier();
}

void KernelRaceCheck::barrier() {
  if (!short_thread_loops_.empty() && race_.empty()) {
    const ir::For& f = *short_thread_loops_.back();
    const auto slot = static_cast<std::size_t>(g_.slot_of.at(f.index.id));
    const std::string place = f.axis == ir::AxisType::WorkgroupReduce
                                  ? std::string("reduction run on the first thread of slot ")
                                  : "thread loop of " + std::to_string(f.end) + " iterations on slot ";
    race_ = "a barrier not every thread of the block reaches: block " + text(now_.block) + " thread " +
            text(now_.thread) + " is in a " + place + std::to_string(slot) + " of " + std::to_string(g_.block[slot]) +
            " threads";
  }
  ++barriers_[now_.block];
  ++now_epoch_;
  forget_reads();
}

void KernelRaceCheck::access(const ir::TensorNode& node, std::int64_t element, bool write) {
  if (write) {
    check_written_value(node, element);
    forget_reads();
  }
  if (reducing_ != nullptr && node.id == reducing_target_) {
    deferred_.push_back({&node, element, write});
    return;
  }
  record(node, element, write);
}

void KernelRaceCheck::record(const ir::TensorNode& node, std::int64_t element, bool write) {
  if (!race_.empty()) return;
  const Stamp stamp{now_, now_epoch_};
  Cell& cell = cells_[cell_key(node.id, element)];
  if (write) {
    if (several(now_.block, g_.grid) || several(now_.thread, g_.block))
      return report(node, element, stamp, stamp, "written by several threads at once");
    if (cell.written && races(cell.writer, stamp)) return report(node, element, cell.writer, stamp, "written twice");
    for (const Stamp& r : cell.readers)
      if (races(r, stamp)) return report(node, element, r, stamp, "read, then written");
    cell.written = true;
    cell.writer = stamp;
    cell.readers.clear();
  } else {
    if (cell.written && races(cell.writer, stamp)) return report(node, element, cell.writer, stamp, "written, then read");
    for (const Stamp& r : cell.readers)
      if (r.who == stamp.who && r.epoch == stamp.epoch) return;
    cell.readers.push_back(stamp);
  }
}

// Each thread of the launch keeps its own copy of a local (a statement outside a slot's loops
// runs on every index of it): a copy set from others is held where all of those are.
void KernelRaceCheck::local(int scope_id, LocalEvent event) {
  if (!race_.empty()) return;
  if (event == LocalEvent::ScopeOpened) open_scope();
  if (event == LocalEvent::ScopeClosed) close_scope();
  if (event == LocalEvent::Declared || event == LocalEvent::ScopeOpened) {
    locals_[scope_id] = {now_, false};
  } else if (event == LocalEvent::Set) {
    locals_[scope_id] = both({now_, false}, read_from_);
    forget_reads();
  } else if (const auto copies = locals_.find(scope_id); copies != locals_.end()) {  // else declared before the kernel
    const Holders& h = copies->second;
    if (stale_read_.empty() && !holds(h))
      stale_read_ = "scalar local v" + std::to_string(scope_id) + " whose copy " +
                    (h.none ? std::string("no thread") : "only block " + text(h.who.block) + " thread " + text(h.who.thread)) +
                    " holds (a GPU thread reads its own copy)";
    read_from_ = both(read_from_, h);
  }
}

// A local scope's body starts flows of its own (its loops and SetLocals forget their reads), in
// the middle of the expression around it: the reads that expression made before the scope still
// flow into its store, with the scope's value (read when it closes).
void KernelRaceCheck::open_scope() {
  open_scopes_.push_back({read_from_, stale_read_});
  forget_reads();
}

void KernelRaceCheck::close_scope() {
  if (open_scopes_.empty()) return;
  read_from_ = open_scopes_.back().read_from;
  stale_read_ = open_scopes_.back().stale_read;
  open_scopes_.pop_back();
}

void KernelRaceCheck::check_written_value(const ir::TensorNode& node, std::int64_t element) {
  if (stale_read_.empty() || !race_.empty()) return;
  race_ = "race on " + node.debug_name() + " element " + std::to_string(element) + ": written by block " +
          text(now_.block) + " thread " + text(now_.thread) + " from a " + stale_read_;
}

// Whether every thread now running holds the copies `h`.
bool KernelRaceCheck::holds(const Holders& h) const {
  return !h.none && within(now_.block, h.who.block, g_.grid) && within(now_.thread, h.who.thread, g_.block);
}

// The threads in both `a` and `b`.
KernelRaceCheck::Holders KernelRaceCheck::both(const Holders& a, const Holders& b) {
  Holders out{a.who, a.none || b.none};
  const auto meet = [&](Slots& x, const Slots& y) {
    for (std::size_t s = 0; s < 3; ++s) {
      if (x[s] == kAll) x[s] = y[s];
      else if (y[s] != kAll && y[s] != x[s]) out.none = true;
    }
  };
  meet(out.who.block, b.who.block);
  meet(out.who.thread, b.who.thread);
  return out;
}

void KernelRaceCheck::forget_reads() {
  read_from_ = {};
  stale_read_.clear();
}

// The slot array and index a hardware loop binds, or {nullptr, 0}.
std::pair<KernelRaceCheck::Slots*, std::size_t> KernelRaceCheck::slot_of(const ir::For& loop) {
  const auto at = g_.slot_of.find(loop.index.id);
  if (at == g_.slot_of.end()) return {nullptr, 0};
  Slots& slots = loop.axis == ir::AxisType::Grid ? now_.block : now_.thread;
  return {&slots, static_cast<std::size_t>(at->second)};
}

// Barriers the block passed: those passed where its indices, or kAll, were current.
std::int64_t KernelRaceCheck::epoch(const Slots& block) const {
  std::int64_t sum = 0;
  for (int mask = 0; mask < 8; ++mask) {
    Slots key = block;
    bool distinct = true;  // each key once: a mask may not clear a slot that is kAll already
    for (std::size_t s = 0; s < 3; ++s) {
      if (((mask >> s) & 1) == 0) continue;
      distinct = distinct && key[s] != kAll;
      key[s] = kAll;
    }
    if (const auto at = barriers_.find(key); distinct && at != barriers_.end()) sum += at->second;
  }
  return sum;
}

// Whether `x` stands for more than one index of the launch (`extent` per slot).
bool KernelRaceCheck::several(const Slots& x, const Slots& extent) {
  for (std::size_t s = 0; s < 3; ++s)
    if (x[s] == kAll && extent[s] > 1) return true;
  return false;
}

// Whether some index `x` stands for differs from some index `y` stands for.
bool KernelRaceCheck::differ(const Slots& x, const Slots& y, const Slots& extent) {
  for (std::size_t s = 0; s < 3; ++s) {
    if (x[s] != kAll && y[s] != kAll ? x[s] != y[s] : extent[s] > 1) return true;
  }
  return false;
}

// Whether every index `x` stands for is one `y` stands for.
bool KernelRaceCheck::within(const Slots& x, const Slots& y, const Slots& extent) {
  for (std::size_t s = 0; s < 3; ++s) {
    if (y[s] != kAll && extent[s] > 1 && x[s] != y[s]) return false;
  }
  return true;
}

bool KernelRaceCheck::races(const Stamp& a, const Stamp& b) const {
  if (differ(a.who.block, b.who.block, g_.grid)) return true;
  return differ(a.who.thread, b.who.thread, g_.block) && a.epoch == b.epoch;
}

std::string KernelRaceCheck::text(const Slots& x) {
  std::string out = "(";
  for (std::size_t s = 0; s < 3; ++s) out += (s ? ", " : "") + (x[s] == kAll ? std::string("*") : std::to_string(x[s]));
  return out + ")";
}

std::string KernelRaceCheck::text(const Stamp& s) {
  return "block " + text(s.who.block) + " thread " + text(s.who.thread) + " after " + std::to_string(s.epoch) +
         " barriers";
}

void KernelRaceCheck::report(const ir::TensorNode& node, std::int64_t element, const Stamp& first, const Stamp& second,
                             const std::string& what) {
  race_ = "race on " + node.debug_name() + " element " + std::to_string(element) + ": " + what + " by " + text(first) +
          " and " + text(second) +
          (differ(first.who.block, second.who.block, g_.grid) ? ", two blocks of one launch"
                                                               : ", with no barrier between them");
}

}  // namespace cannl::interp
