// The GPU kernel race checker (see race_check.h).
#include "cannl/interp/race_check.h"

#include "cannl/ir/tree_mapper.h"

namespace cannl::interp {

bool race_checkable(const ir::StmtRef& body) {
  bool cooperative = false;
  ir::for_each_stmt(body, [&](const ir::Stmt& x) {
    const auto* t = std::get_if<ir::TileMma>(&x.node);
    const auto* f = std::get_if<ir::For>(&x.node);
    cooperative = cooperative || (t && t->blocking.blocked()) || (f && f->axis == ir::AxisType::WorkgroupReduce);
  });
  return !cooperative;
}

void KernelRaceCheck::iteration(const ir::For& loop, std::int64_t index) {
  const auto [slots, s] = slot_of(loop);
  if (slots == nullptr) return;
  (*slots)[s] = index;
  if (slots == &now_.block) now_epoch_ = epoch(now_.block);
}

void KernelRaceCheck::loop_done(const ir::For& loop) {
  const auto [slots, s] = slot_of(loop);
  if (slots == nullptr) return;
  (*slots)[s] = kAll;
  if (slots == &now_.block) now_epoch_ = epoch(now_.block);
}

void KernelRaceCheck::barrier() {
  ++barriers_[now_.block];
  ++now_epoch_;
}

void KernelRaceCheck::access(const ir::TensorNode& node, std::int64_t element, bool write) {
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
