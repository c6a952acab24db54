#pragma once
// A race checker for GPU kernels run on the reference interpreter: it watches the run
// (interp::Observer) and tells, from the annotated loops around each access, which blocks and
// threads of the launch make it. Two accesses to one cell, one of them a write, race when they
// come from two different blocks (nothing orders blocks within a launch), or from two different
// threads of one block with no barrier of that block between them. A statement outside a slot's
// loops stands for every index of that slot: a write there from a block of several threads is
// written by all of them at once. The interpreter runs one thread of control, so a kernel whose
// order on a GPU differs from the serial loops' shows here as a race, whatever the values.
//
//   GpuRaceCheck check(ir::kernel_geometry(body));
//   interp::run(kernel, buffers, statics, &check);
//   EXPECT_EQ(check.race(), "");
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cannl/interp/interpreter.h"
#include "cannl/ir/kernel_geometry.h"

namespace cannl::schedule::testing {

class GpuRaceCheck final : public interp::Observer {
 public:
  explicit GpuRaceCheck(ir::KernelGeometry geometry) : g_(std::move(geometry)) {}

  /// The first race seen, described; empty when there was none.
  const std::string& race() const { return race_; }

  void iteration(const ir::For& loop, std::int64_t index) override {
    if (const auto [slots, s] = slot_of(loop); slots) (*slots)[s] = index;
  }
  void loop_done(const ir::For& loop) override {
    if (const auto [slots, s] = slot_of(loop); slots) (*slots)[s] = kAll;
  }
  void barrier() override { ++barriers_[now_.block]; }
  void access(const ir::TensorNode& node, std::int64_t element, bool write) override {
    if (!race_.empty()) return;
    const Stamp stamp{now_, epoch(now_.block)};
    Cell& cell = cells_[{node.id, element}];
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

 private:
  static constexpr std::int64_t kAll = -1;  // outside the slot's loops: every index of the slot
  using Slots = std::array<std::int64_t, 3>;
  struct Who {
    Slots block{kAll, kAll, kAll}, thread{kAll, kAll, kAll};
    bool operator==(const Who&) const = default;
  };
  struct Stamp {
    Who who;
    std::int64_t epoch = 0;  // the barriers its block had passed
  };
  struct Cell {
    bool written = false;
    Stamp writer;
    std::vector<Stamp> readers;  // since the last write
  };

  ir::KernelGeometry g_;
  Who now_;
  std::map<Slots, std::int64_t> barriers_;  // by the blocks that passed them (kAll: every index)
  std::map<std::pair<int, std::int64_t>, Cell> cells_;
  std::string race_;

  // The slot array and index a hardware loop binds, or {nullptr, 0}.
  std::pair<Slots*, std::size_t> slot_of(const ir::For& loop) {
    const auto at = g_.slot_of.find(loop.index.id);
    if (at == g_.slot_of.end()) return {nullptr, 0};
    Slots& slots = loop.axis == ir::AxisType::Grid ? now_.block : now_.thread;
    return {&slots, static_cast<std::size_t>(at->second)};
  }

  // Barriers the block passed: those passed where its indices, or kAll, were current.
  std::int64_t epoch(const Slots& block) const {
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
  static bool several(const Slots& x, const Slots& extent) {
    for (std::size_t s = 0; s < 3; ++s)
      if (x[s] == kAll && extent[s] > 1) return true;
    return false;
  }
  // Whether some index `x` stands for differs from some index `y` stands for.
  static bool differ(const Slots& x, const Slots& y, const Slots& extent) {
    for (std::size_t s = 0; s < 3; ++s) {
      if (x[s] != kAll && y[s] != kAll ? x[s] != y[s] : extent[s] > 1) return true;
    }
    return false;
  }
  bool races(const Stamp& a, const Stamp& b) const {
    if (differ(a.who.block, b.who.block, g_.grid)) return true;
    return differ(a.who.thread, b.who.thread, g_.block) && a.epoch == b.epoch;
  }

  static std::string text(const Slots& x) {
    std::string out = "(";
    for (std::size_t s = 0; s < 3; ++s) out += (s ? ", " : "") + (x[s] == kAll ? std::string("*") : std::to_string(x[s]));
    return out + ")";
  }
  static std::string text(const Stamp& s) {
    return "block " + text(s.who.block) + " thread " + text(s.who.thread) + " after " + std::to_string(s.epoch) +
           " barriers";
  }
  void report(const ir::TensorNode& node, std::int64_t element, const Stamp& first, const Stamp& second,
              const std::string& what) {
    race_ = "race on " + node.debug_name() + " element " + std::to_string(element) + ": " + what + " by " +
            text(first) + " and " + text(second) +
            (differ(first.who.block, second.who.block, g_.grid) ? ", two blocks of one launch"
                                                                 : ", with no barrier between them");
  }
};

}  // namespace cannl::schedule::testing
