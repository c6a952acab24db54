#pragma once
// A race checker for GPU kernels run on the reference interpreter: it watches a kernel's run
// (interp::Observer) and tells, from the annotated loops around each access, which blocks and
// threads of the launch make it (ir::KernelGeometry: the slot each Grid / Workgroup loop binds).
// Two accesses to one cell, one of them a write, race when they come from two different blocks
// (nothing orders blocks within a launch), or from two different threads of one block with no
// barrier of that block between them. A barrier in a thread loop shorter than its slot's launch,
// or in a reduction run on the first thread, is reported too: the other threads never reach it
// (a hang on a GPU). A statement outside a slot's loops stands for every index
// of that slot: a write there from a block of several threads is written by all of them at once.
// The interpreter runs one thread of control, so a kernel whose order on a GPU differs from the
// serial loops' shows here as a race, whatever the values.
//
// Scalar locals are a thread's own on a GPU, one variable on the interpreter: only the threads
// that ran the statement that last set a local (the first thread alone; a thread loop's last
// iteration) hold the interpreter's value in their copy, and a copy set from other copies is held
// by the threads holding all of them. A node written by a thread from a copy it does not hold
// (read in the same expression, or the same loop iteration before the write) is reported: the
// GPU would store other numbers there. Copies never stored (threads computing a value the first
// thread alone stores) are no error.
//
// WorkgroupReduce loops are watched as the GPU printer renders them (ir::block_reduction and
// its divergence rule): a loop in the block-reduction form at a place all of a block's threads
// reach is cooperative (thread r reads the cells of its step v(r); a barrier; the slot's first
// thread reads and writes the accumulator; a barrier); any other runs serially on the slot's
// first thread, with no barrier. Blocked tiles run as the printer renders them, not as their
// loops: a kernel with one is not one to check (`race_checkable`).
//
//   KernelRaceCheck check(ir::kernel_geometry(body), body);
//   interp::run(kernel, buffers, statics, &check);
//   if (!check.race().empty()) ...   // "race on x element 7: written, then read by block (0, *, *) ..."
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cannl/interp/interpreter.h"
#include "cannl/ir/kernel_geometry.h"

namespace cannl::interp {

/// Whether KernelRaceCheck can watch kernel `body`: no blocked tile.
bool race_checkable(const ir::StmtRef& body);

class KernelRaceCheck final : public Observer {
 public:
  /// Watches a run of kernel `body`, launched with `geometry`.
  KernelRaceCheck(ir::KernelGeometry geometry, const ir::StmtRef& body);

  /// The first race (or barrier not every thread reaches) seen, described; empty when none.
  const std::string& race() const { return race_; }

  void iteration(const ir::For& loop, std::int64_t index) override;
  void loop_done(const ir::For& loop) override;
  void barrier() override;
  void access(const ir::TensorNode& node, std::int64_t element, bool write) override;
  void local(int scope_id, LocalEvent event) override;

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

  // How a WorkgroupReduce loop runs on a GPU.
  struct Reduction {
    bool cooperative = false;
    int target = -1;  // the accumulator's node id, when cooperative
  };
  // A cooperative reduction's accesses to its accumulator, made by the first thread after the tree.
  struct Deferred {
    const ir::TensorNode* node;
    std::int64_t element;
    bool write;
  };

  ir::KernelGeometry g_;
  std::unordered_map<const ir::For*, Reduction> reductions_;
  const ir::For* reducing_ = nullptr;  // the cooperative reduction running, if any
  int reducing_target_ = -1;
  std::vector<const ir::For*> short_thread_loops_;  // running, where some threads skip the body
  std::vector<Deferred> deferred_;
  Who now_;
  std::int64_t now_epoch_ = 0;              // epoch(now_.block), kept current
  std::map<Slots, std::int64_t> barriers_;  // by the blocks that passed them (kAll: every index)
  std::unordered_map<std::uint64_t, Cell> cells_;  // by node id and element (cell_key)
  // The threads whose copy of a local holds the interpreter's value (`none`: no thread's).
  struct Holders {
    Who who;
    bool none = false;
  };
  std::unordered_map<int, Holders> locals_;  // by scope id
  Holders read_from_;        // holders of every local read since the last write (intersected)
  std::string stale_read_;   // the first of those reads some reading thread does not hold
  // The two above as they were when each local scope still running opened (innermost last): the
  // expression's reads before the scope, restored when it closes.
  struct PendingReads {
    Holders read_from;
    std::string stale_read;
  };
  std::vector<PendingReads> open_scopes_;
  std::string race_;
  std::set<ir::Symbol> thread_indices_;  // of the thread loops around the statement find_reductions is at

  static std::uint64_t cell_key(int node, std::int64_t element) {
    return (static_cast<std::uint64_t>(node) << 40) ^ static_cast<std::uint64_t>(element);
  }

  void find_reductions(const ir::StmtRef& stmt, int divergence);
  void find_reductions(const ir::ScalarRef& scalar, int divergence);
  void finish_reduction(const ir::For& loop);
  void record(const ir::TensorNode& node, std::int64_t element, bool write);
  void check_written_value(const ir::TensorNode& node, std::int64_t element);
  void open_scope();
  void close_scope();
  std::pair<Slots*, std::size_t> slot_of(const ir::For& loop);
  std::int64_t epoch(const Slots& block) const;
  static bool several(const Slots& x, const Slots& extent);
  static bool differ(const Slots& x, const Slots& y, const Slots& extent);
  static bool within(const Slots& x, const Slots& y, const Slots& extent);
  bool holds(const Holders& h) const;
  static Holders both(const Holders& a, const Holders& b);
  void forget_reads();
  bool races(const Stamp& a, const Stamp& b) const;
  static std::string text(const Slots& x);
  static std::string text(const Stamp& s);
  void report(const ir::TensorNode& node, std::int64_t element, const Stamp& first, const Stamp& second,
              const std::string& what);
};

}  // namespace cannl::interp
