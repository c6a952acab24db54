// Kernel fission (see fission.h). The top-level statements are walked in order, growing one
// open kernel: a statement joins it when both are serial (one thread runs them in order), or
// both parallel and kernel_sharing proves every dependency on the open kernel's statements
// block-local (a workgroup barrier goes before it when threads of a block must see each
// other's cells), the merged launch still fits the device and every write of the merged
// kernel stays under loops of every active hardware slot (a statement binding fewer slots than
// the kernel gets extent-1 loops on the others), with every barrier where all of a block's
// threads reach it. Anything else closes the kernel. A statement
// holding a blocked matmul tile (ir::TileMma::blocking) is always a kernel of its own.
//
// Scalar locals the optimizer hoisted to the top level (DeclareLocal and the statements setting
// it, writing no node: opt/hoist.cpp) are no launches of their own: they are replicated at the
// start of every kernel using them, each thread computing its own copy. That keeps their value:
// hoisting leaves the nodes they read unwritten from their place to their last user, a
// definition reading a node the open kernel writes closes that kernel first, and a parallel
// statement writing a node a definition replicated into the open kernel reads (after the
// local's last user) starts a kernel of its own.
//
// A local set by a statement that writes nodes too (Privatize's accumulator, set in its loop,
// maybe Partitioned, and stored after it) lives in one kernel of one block with every
// statement using it, each after a barrier, read only on threads that ran every setter
// (local_reach.h); that kernel never grows to more blocks. Anything else is a ScheduleError.
#include "cannl/schedule/fission.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string>

#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/kernel_sharing.h"
#include "schedule/local_reach.h"
#include "schedule/loop_tree.h"
#include "schedule/schedule_error.h"

namespace cannl::schedule {

namespace {

using detail::Sharing;

bool is_write(const ir::Stmt& s) {
  return std::holds_alternative<ir::Set>(s.node) || std::holds_alternative<ir::SetDynamic>(s.node) ||
         std::holds_alternative<ir::TileMma>(s.node) || std::holds_alternative<ir::ZeroOut>(s.node);
}

// The safety rule of annotated kernels (semantics-backend.md 8.1): every write sits under
// annotated loops bound to every hardware slot the launch uses, or each thread of the other
// slots would repeat it. "" when it holds, else the first offending write.
class SlotCoverage {
 public:
  explicit SlotCoverage(const ir::KernelGeometry& g) : geometry_(g) {}

  std::string first_uncovered(const ir::StmtRef& s) {
    if (!s) return "";
    if (const auto* t = std::get_if<ir::TileMma>(&s->node); t && t->blocking.blocked()) {
      // A blocked tile binds Grid and Workgroup slot 0 itself (its blocks and threads).
      bound_.push_back({true, 0});
      bound_.push_back({false, 0});
      const bool ok = covered();
      bound_.resize(bound_.size() - 2);
      return ok ? "" : ir::print_stmt(s);
    }
    if (is_write(*s)) return covered() ? "" : ir::print_stmt(s);
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts)
        if (auto bad = first_uncovered(x); !bad.empty()) return bad;
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      return first_uncovered(i->body);
    } else if (const auto* f = std::get_if<ir::For>(&s->node)) {
      const auto slot = geometry_.slot_of.find(f->index.id);
      const bool hardware = slot != geometry_.slot_of.end();
      if (hardware) bound_.push_back({f->axis == ir::AxisType::Grid, slot->second});
      auto bad = first_uncovered(f->body);
      if (hardware) bound_.pop_back();
      return bad;
    }
    return "";  // locals and barriers write no node
  }

 private:
  const ir::KernelGeometry& geometry_;
  std::vector<std::pair<bool, int>> bound_;  // (grid?, slot) of the annotated loops around

  bool covered() const {
    for (int slot = 0; slot < 3; ++slot) {
      for (const bool grid : {true, false}) {
        const std::int64_t launched = grid ? geometry_.grid[slot] : geometry_.block[slot];
        if (launched > 1 && std::find(bound_.begin(), bound_.end(), std::pair{grid, slot}) == bound_.end()) return false;
      }
    }
    return true;
  }
};

std::string first_uncovered_write(const ir::StmtRef& body, const ir::KernelGeometry& g) {
  return SlotCoverage(g).first_uncovered(body);
}

// Whether every thread of a block reaches each barrier of kernel `body`: none sits in a thread loop
// shorter than its slot's launch (the threads past its end skip the body). Merging pads a
// statement with one-iteration thread loops (`padded`) and lengthens a slot's launch, which can
// put a statement's own barriers (a serial loop's, from the final lowering round) there: a
// block that hangs, or on some devices runs on with wrong numbers.
bool every_thread_reaches_its_barriers(const ir::StmtRef& body, const ir::KernelGeometry& g, bool guarded = false) {
  if (std::holds_alternative<ir::Barrier>(body->node)) return !guarded;
  if (const auto* q = std::get_if<ir::Seq>(&body->node)) {
    return std::all_of(q->stmts.begin(), q->stmts.end(),
                       [&](const ir::StmtRef& x) { return every_thread_reaches_its_barriers(x, g, guarded); });
  }
  if (const auto* i = std::get_if<ir::If>(&body->node)) return every_thread_reaches_its_barriers(i->body, g, guarded);
  if (const auto* f = std::get_if<ir::For>(&body->node)) {
    const auto slot = g.slot_of.find(f->index.id);
    const bool thread = f->axis == ir::AxisType::Workgroup || f->axis == ir::AxisType::WorkgroupReduce;
    // A WorkgroupReduce body with a barrier is never a tree (whose body is one accumulation): the
    // printer runs it on the slot's first thread.
    const bool short_loop =
        f->axis == ir::AxisType::WorkgroupReduce ||
        (thread && slot != g.slot_of.end() && f->end < g.block[static_cast<std::size_t>(slot->second)]);
    return every_thread_reaches_its_barriers(f->body, g, guarded || short_loop);
  }
  return true;
}

bool within_limits(const ir::KernelGeometry& g, const ir::GpuLimits& limits) {
  if (g.threads_per_block() > limits.max_threads_per_block || g.shared_bytes > limits.max_shared_bytes) return false;
  for (std::size_t d = 0; d < 3; ++d)
    if (g.block[d] > limits.max_block_dims[d] || g.grid[d] > limits.max_grid_dims[d]) return false;
  return true;
}

// The ids of the locals a statement declares, sets or reads.
std::set<int> locals_of(const ir::StmtRef& s) {
  std::set<int> out;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    if (const auto* l = std::get_if<ir::SetLocal>(&x.node)) out.insert(l->scope_id);
    if (const auto* d = std::get_if<ir::DeclareLocal>(&x.node)) out.insert(d->scope_id);
  });
  ir::for_each_scalar(s, [&](const ir::Scalar& x) {
    if (const auto* g = std::get_if<ir::GetLocal>(&x.node)) out.insert(g->scope_id);
  });
  return out;
}

// The ids of the locals a statement sets (a privatized accumulator: opt/hoist.cpp's definitions
// are replicated instead).
std::set<int> locals_set_by(const ir::StmtRef& s) {
  std::set<int> out;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    if (const auto* l = std::get_if<ir::SetLocal>(&x.node)) out.insert(l->scope_id);
  });
  return out;
}

// The ids of the nodes a statement writes (`write`) or reads.
std::set<int> nodes_accessed(const ir::StmtRef& s, bool write) {
  std::set<int> out;
  for (const auto& a : detail::collect_accesses(s).accesses)
    if (a.write == write) out.insert(a.node->id);
  return out;
}

bool intersects(const std::set<int>& a, const std::set<int>& b) {
  return std::any_of(a.begin(), a.end(), [&](int x) { return b.contains(x); });
}

ir::StmtRef body_of(const std::vector<ir::StmtRef>& stmts) {
  return stmts.size() == 1 ? stmts.front() : ir::seq(stmts);
}

bool is_blocked_tile(const ir::Stmt& s) {
  const auto* t = std::get_if<ir::TileMma>(&s.node);
  return t != nullptr && t->blocking.blocked();
}

// Whether `s` holds a blocked tile (a launch of its own, see ir::TileMma::blocking).
bool holds_blocked_tile(const ir::StmtRef& s) {
  bool found = false;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) { found = found || is_blocked_tile(x); });
  return found;
}

// How many Grid and thread slots a statement's loops (and blocked tiles: slot 0 of each) bind
// (the deepest path's counts).
std::pair<int, int> slot_heights(const ir::StmtRef& s) {
  const ir::KernelGeometry own = ir::kernel_geometry(s);
  int grid = 0, threads = 0;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    if (is_blocked_tile(x)) {
      grid = std::max(grid, 1);
      threads = std::max(threads, 1);
    }
    const auto* f = std::get_if<ir::For>(&x.node);
    const auto slot = f ? own.slot_of.find(f->index.id) : own.slot_of.end();
    if (slot == own.slot_of.end()) return;
    int& height = f->axis == ir::AxisType::Grid ? grid : threads;
    height = std::max(height, slot->second + 1);
  });
  return {grid, threads};
}

// The slots a launch uses: up to its highest one with more than one block (thread).
int used_slots(const std::array<std::int64_t, 3>& dims) {
  for (int k = 2; k >= 0; --k)
    if (dims[static_cast<std::size_t>(k)] > 1) return k + 1;
  return 0;
}

// The kernel's statements, each under extent-1 Grid (Workgroup) loops binding the used slots
// above its own: a statement with fewer hardware dimensions than the kernel then runs in the
// first block (thread) along each of the others only, instead of once in every one.
std::vector<ir::StmtRef> padded(std::vector<ir::StmtRef> stmts, const ir::KernelGeometry& kernel) {
  for (auto& s : stmts) {
    if (std::holds_alternative<ir::Barrier>(s->node)) continue;
    auto [grid, threads] = slot_heights(s);  // a serial statement (0, 0) runs on the first thread
    for (; threads < used_slots(kernel.block); ++threads)
      s = ir::for_loop(ir::fresh_symbol(), 0, 1, s, ir::AxisType::Workgroup);
    for (; grid < used_slots(kernel.grid); ++grid) s = ir::for_loop(ir::fresh_symbol(), 0, 1, s, ir::AxisType::Grid);
  }
  return stmts;
}

// `stmts` padded to their kernel's slots, as one body.
ir::StmtRef kernel_body(const std::vector<ir::StmtRef>& stmts) {
  return body_of(padded(stmts, ir::kernel_geometry(body_of(stmts))));
}

class Fission {
 public:
  Fission(const ir::LoweredRoutine& r, const ir::Target& t, bool enabled) : routine_(r), target_(t), enabled_(enabled) {}

  std::vector<Segment> run() {
    for (const auto& s : ir::flatten_seq(routine_.body)) add(s);
    close();
    return std::move(segments_);
  }

 private:
  const ir::LoweredRoutine& routine_;
  const ir::Target& target_;
  bool enabled_;
  std::vector<Segment> segments_;
  // The open kernel: its statements (barriers included), the top-level statements among them.
  std::vector<ir::StmtRef> open_, members_;
  std::vector<detail::StatementFacts> member_facts_;  // of the members (empty for a tile's)
  std::set<int> open_set_locals_;    // the locals the open kernel's members set
  std::set<int> closed_set_locals_;  // those closed kernels set: their values are gone
  // The most blocks and threads per block any member asks for on its own.
  std::int64_t largest_blocks_ = 0, largest_block_ = 0, largest_threads_ = 0;
  bool open_serial_ = false;
  bool open_tiled_ = false;  // the open kernel is a blocked tile's
  // Locals declared at the top level, and the statements defining them, in order.
  std::set<int> top_locals_;
  std::vector<ir::StmtRef> definitions_;

  bool defines_top_local(const ir::StmtRef& s) const {
    return intersects(locals_of(s), top_locals_) && nodes_accessed(s, true).empty() &&
           ir::kernel_geometry(s).serial();
  }
  // Whether the open kernel (or a local definition it may replicate) accesses node `id`.
  bool touched_by_open(int id) const {
    const auto touches = [&](const ir::StmtRef& x) {
      return nodes_accessed(x, true).contains(id) || nodes_accessed(x, false).contains(id);
    };
    return std::any_of(members_.begin(), members_.end(), touches) ||
           std::any_of(definitions_.begin(), definitions_.end(), touches);
  }
  std::set<int> written_by_open() const {
    std::set<int> out;
    for (const auto& m : members_) out.merge(nodes_accessed(m, true));
    return out;
  }
  // The definitions of the top-level locals `stmts` use, and of the locals those use, in order.
  std::vector<ir::StmtRef> definitions_for(const std::vector<ir::StmtRef>& stmts) const {
    std::set<int> needed;
    for (const auto& s : stmts)
      for (int id : locals_of(s))
        if (top_locals_.contains(id)) needed.insert(id);
    std::vector<bool> taken(definitions_.size(), false);
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t k = 0; k < definitions_.size(); ++k) {
        if (taken[k] || !intersects(locals_of(definitions_[k]), needed)) continue;
        taken[k] = grew = true;
        needed.merge(locals_of(definitions_[k]));
      }
    }
    std::vector<ir::StmtRef> out;
    for (std::size_t k = 0; k < definitions_.size(); ++k)
      if (taken[k]) out.push_back(definitions_[k]);
    return out;
  }

  void add(const ir::StmtRef& s) {
    if (std::holds_alternative<ir::Comment>(s->node)) return;
    if (const auto* d = std::get_if<ir::DeclareLocal>(&s->node)) top_locals_.insert(d->scope_id);
    // A definition is replicated at the start of each kernel using its local: only the first
    // setter of the local is one (a later one, such as the tail of a partitioned privatized loop,
    // must stay in its place).
    const std::set<int> uses = locals_of(s), sets = locals_set_by(s);
    if (defines_top_local(s) && !intersects(sets, open_set_locals_) && !intersects(sets, closed_set_locals_)) {
      if (intersects(nodes_accessed(s, false), written_by_open())) close();
      definitions_.push_back(s);
      return;
    }
    if (const auto* z = std::get_if<ir::ZeroOut>(&s->node)) {
      // A memset of a node the open kernel does not touch goes before it: the statements after
      // the ZeroOut may still join the kernel (an accumulation after its zeroing).
      if (!enabled_ || touched_by_open(z->node->id)) close();
      Segment zero;
      zero.kind = Segment::Kind::Zero;
      zero.zeroed = z->node;
      segments_.push_back(std::move(zero));
      return;
    }
    const ir::KernelGeometry own = ir::kernel_geometry(s);
    const bool serial = own.serial();
    // A blocked tile is a launch of its own: its blocks and threads share the staged slices.
    const bool tiled = holds_blocked_tile(s);
    detail::StatementFacts facts = tiled ? detail::StatementFacts{} : detail::statement_facts(s);
    if (intersects(uses, closed_set_locals_)) throw_local_across_launches(s, "a launch before this one set it");
    // A privatized loop opens a kernel of its own, of one block (the local's definition, replicated
    // into the kernel, reads the node the local's reader stores), unless the open kernel already
    // sets that local (a Partition of the loop) or both are serial (one thread).
    if (intersects(sets, top_locals_) && !intersects(sets, open_set_locals_) && !(serial && open_serial_)) close();
    if (intersects(uses, open_set_locals_)) {
      join_carrying_locals(s, own, tiled, sets);
    } else if (open_.empty() || !enabled_ || tiled || open_tiled_ || serial != open_serial_ ||
               !(serial || join(s, facts, own))) {
      close();
      open_serial_ = serial;
    }
    open_set_locals_.insert(sets.begin(), sets.end());
    open_tiled_ = tiled;
    open_.push_back(s);
    members_.push_back(s);
    member_facts_.push_back(std::move(facts));
    largest_blocks_ = std::max(largest_blocks_, own.blocks());
    largest_block_ = std::max(largest_block_, own.threads_per_block());
    largest_threads_ = std::max(largest_threads_, own.blocks() * own.threads_per_block());
  }

  // `s` reads or sets a local an open kernel's statement set (Privatize's accumulator, read after
  // its loop, or a later part of a Partition of that loop): a GPU thread keeps no local across
  // launches, so `s` joins that kernel, else a ScheduleError. A serial `s` joins a serial kernel
  // (one thread runs both in order). Otherwise `s` goes after a barrier in a kernel of one block
  // (the local's definition, replicated into the kernel, reads the node `s` may write: the
  // barrier orders every thread's definition before that write), where every thread reading the
  // local ran every statement setting it (local_reach.h).
  void join_carrying_locals(const ir::StmtRef& s, const ir::KernelGeometry& own, bool tiled,
                            const std::set<int>& sets) {
    if (tiled || open_tiled_) throw_local_across_launches(s, "a blocked tile is a launch of its own");
    if (open_serial_ && own.serial()) return;
    const auto merged = merged_launch(s, true);
    if (!merged) throw_local_across_launches(s, "the merged kernel would not fit the device or its barriers");
    if (merged->geometry.blocks() != 1) throw_local_across_launches(s, "the merged kernel has several blocks");
    const std::string unset =
        detail::first_read_without_its_local(merged->body, merged->geometry, carried_locals(sets));
    if (!unset.empty())
      throw_local_across_launches(s, "some threads would read it without running every statement setting it:\n" + unset);
    open_.push_back(ir::barrier());
    open_serial_ = false;
  }
  [[noreturn]] void throw_local_across_launches(const ir::StmtRef& s, const std::string& why) const {
    std::string setters;
    for (const auto& m : members_)
      if (intersects(locals_set_by(m), locals_of(s))) setters += ir::print_stmt(m);
    throw ScheduleError("fission: a scalar local set in one statement is used by a later one that cannot run in the "
                        "same kernel (" + why + "); a GPU thread keeps no local across launches, so a statement "
                        "using it joins the kernel setting it: a kernel of one block, whose threads reading the local "
                        "all ran every statement setting it. Keep the privatized loop and its readers Serial, or do "
                        "not Privatize here\n" +
                        (setters.empty() ? "" : "set in:\n" + setters) + "used in:\n" + ir::print_stmt(s));
  }
  // The locals declared at the routine's top that the open kernel (and a statement setting
  // `also`) sets: each of its threads carries their values from statement to statement.
  std::set<int> carried_locals(const std::set<int>& also = {}) const {
    std::set<int> out;
    for (const std::set<int>* set : {&open_set_locals_, &also})
      std::copy_if(set->begin(), set->end(), std::inserter(out, out.end()),
                   [&](int id) { return top_locals_.contains(id); });
    return out;
  }
  bool carries_top_locals() const { return intersects(open_set_locals_, top_locals_); }

  // Whether `s` writes a node that a definition replicated into the open kernel with `s` reads.
  // Every thread of every block computes its copy of the local at the kernel's start, unordered
  // with the writes of other threads and blocks: block 0 could overwrite the cell before block 1
  // read it. (Hoisting keeps such writes after the local's last user, never before it.)
  bool overwrites_a_definition(const ir::StmtRef& s) const {
    std::vector<ir::StmtRef> merged = open_;
    merged.push_back(s);
    std::set<int> read;
    for (const auto& d : definitions_for(merged)) read.merge(nodes_accessed(d, false));
    return intersects(nodes_accessed(s, true), read);
  }

  // Whether parallel statement `s` may join the open parallel kernel; adds the barrier it needs.
  bool join(const ir::StmtRef& s, const detail::StatementFacts& facts, const ir::KernelGeometry& own) {
    if (overwrites_a_definition(s)) return false;
    Sharing need = Sharing::Free;
    for (const auto& earlier : member_facts_) {
      need = std::max(need, detail::kernel_sharing(routine_, earlier, facts));
      if (need == Sharing::Separate) return false;
    }
    const auto merged = merged_launch(s, need == Sharing::WithBarrier);
    if (!merged) return false;
    const ir::KernelGeometry& g = merged->geometry;
    // A kernel carrying a local stays one block: its definition, replicated into every block,
    // would read the node the local's reader stores in another.
    if (carries_top_locals() && g.blocks() > 1) return false;
    // Merged statements with different shapes leave threads and blocks idle: no block may grow
    // (idle threads hold the multiprocessor's slots), at most twice the blocks of the largest,
    // and at most twice the threads of the largest (25 busy threads in blocks of 256 would run
    // a long nest at a tenth of the occupancy it has alone).
    const std::int64_t threads = g.blocks() * g.threads_per_block();
    if (g.threads_per_block() > std::max(largest_block_, own.threads_per_block()) ||
        g.blocks() > 2 * std::max(largest_blocks_, own.blocks()) ||
        threads > 2 * std::max(largest_threads_, own.blocks() * own.threads_per_block()))
      return false;
    if (need == Sharing::WithBarrier) open_.push_back(ir::barrier());
    return true;
  }

  // The launch of the open kernel with `s` after it (and a barrier before `s`): nullopt unless it
  // fits the device, every write stays under loops of every active slot and every thread of a
  // block reaches each barrier.
  struct Merged {
    ir::StmtRef body;  // padded to the kernel's slots
    ir::KernelGeometry geometry;
  };
  std::optional<Merged> merged_launch(const ir::StmtRef& s, bool barrier) const {
    std::vector<ir::StmtRef> merged = open_;
    if (barrier) merged.push_back(ir::barrier());
    merged.push_back(s);
    const ir::StmtRef body = kernel_body(merged);
    const ir::KernelGeometry g = ir::kernel_geometry(body);
    if (!within_limits(g, target_.gpu) || !first_uncovered_write(body, g).empty() ||
        !every_thread_reaches_its_barriers(body, g))
      return std::nullopt;
    return Merged{body, g};
  }

  // Joins after a local's readers pad them and its setters alike (a slot no member had): the
  // closed kernel must still give every reading thread the local's value, or fission erred.
  void check_carried_locals(const Segment& kernel) const {
    const std::set<int> carried = carried_locals();
    if (carried.empty()) return;
    const std::string unset = detail::first_read_without_its_local(kernel.body, kernel.geometry, carried);
    internal_check(unset.empty(), [&] {
      return "fission of routine '" + routine_.name + "': a kernel reads a local on threads that did not set it: " +
             unset + "\n" + ir::print_stmt(kernel.body);
    });
  }

  void close() {
    if (open_.empty()) return;
    Segment kernel;
    std::vector<ir::StmtRef> stmts = definitions_for(open_);
    const ir::StmtRef body = kernel_body(open_);
    const std::vector<ir::StmtRef> own = ir::flatten_seq(body);
    stmts.insert(stmts.end(), own.begin(), own.end());
    kernel.body = body_of(stmts);
    kernel.geometry = ir::kernel_geometry(kernel.body);
    check_carried_locals(kernel);
    segments_.push_back(std::move(kernel));
    open_.clear();
    members_.clear();
    member_facts_.clear();
    closed_set_locals_.merge(open_set_locals_);
    open_set_locals_.clear();
    largest_blocks_ = largest_block_ = largest_threads_ = 0;
  }
};

// The first loop of a kernel's body in preorder (what a message names), or a symbol of none.
ir::Symbol first_loop(const ir::StmtRef& body) {
  const auto loops = detail::canonical_loops(body);
  return loops.empty() ? ir::Symbol{} : loops.front();
}

}  // namespace

std::vector<Segment> fission(const ir::LoweredRoutine& routine, const ir::Target& target, bool enabled) {
  internal_check(target.gpu.max_threads_per_block > 0,
                 [&] { return "fission of routine '" + routine.name + "': target " + target.backend + " is no GPU"; });
  std::vector<Segment> segments = Fission(routine, target, enabled).run();
  for (const Segment& s : segments) {
    if (s.kind != Segment::Kind::Kernel) continue;
    check_hardware_limits(s, target);
    const std::string bad = first_uncovered_write(s.body, s.geometry);
    if (!bad.empty())
      throw InternalError("fission of routine '" + routine.name + "': a kernel's write is not under loops of every " +
                          "active hardware slot (every thread of the others would repeat it): " + bad +
                          "\n" + ir::print_stmt(s.body));
  }
  return segments;
}

void check_hardware_limits(const Segment& segment, const ir::Target& target) {
  if (segment.kind != Segment::Kind::Kernel) return;
  const ir::KernelGeometry& g = segment.geometry;
  const ir::GpuLimits& limits = target.gpu;
  const ir::LoweredRoutine kernel{"kernel", segment.body, {}};
  const ir::Symbol loop = first_loop(segment.body);
  auto fail = [&](const std::string& what, std::int64_t value, const std::string& limit, std::int64_t bound,
                  const std::string& fix) {
    detail::throw_schedule_error(kernel, loop,
                                 "check_hardware_limits: the kernel from loop " + detail::name_of(kernel, loop) +
                                     " on target " + target.backend,
                                 what + " " + std::to_string(value) + " exceeds the device's " + limit + " of " +
                                     std::to_string(bound),
                                 fix);
  };
  static const char* const kDims[] = {"x", "y", "z"};
  const std::string smaller_block = "a smaller gpu_schedule_block_size, or Split the Workgroup loops";
  if (g.threads_per_block() > limits.max_threads_per_block)
    fail("threads per block", g.threads_per_block(), "max_threads_per_block", limits.max_threads_per_block,
         smaller_block);
  for (std::size_t d = 0; d < 3; ++d) {
    if (g.block[d] > limits.max_block_dims[d])
      fail(std::string("block dimension ") + kDims[d], g.block[d], "max_block_dims", limits.max_block_dims[d],
           smaller_block);
    if (g.grid[d] > limits.max_grid_dims[d])
      fail(std::string("grid dimension ") + kDims[d], g.grid[d], "max_grid_dims", limits.max_grid_dims[d],
           "bind that Grid loop to slot x (the innermost Grid loop) or Split it over two Grid loops");
  }
  if (g.shared_bytes > limits.max_shared_bytes)
    fail("workgroup-shared memory (bytes)", g.shared_bytes, "max_shared_bytes", limits.max_shared_bytes,
         "smaller staged tiles (gpu_tile_bm, gpu_tile_bn, gpu_tile_bk; on tensor cores gpu_mma_bm, gpu_mma_bn, gpu_mma_bk)");
}

}  // namespace cannl::schedule
