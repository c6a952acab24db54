// The final lowering round (see lower_for_target.h).
#include "cannl/schedule/lower_for_target.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/legality.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"

namespace cannl::schedule {

namespace {

ir::StmtRef make(ir::For f) { return std::make_shared<const ir::Stmt>(ir::Stmt{std::move(f)}); }

// Whether the tile writes every cell of d exactly once: as many distinct cells as d has (every
// access of the fallback is in bounds, so they are all of d's).
bool covers_output(const ir::TileMma& t) {
  const ir::TileGroups g = ir::tile_groups(t);
  std::vector<ir::TileAxis> cells = g.rows;
  cells.insert(cells.end(), g.cols.begin(), g.cols.end());
  return t.rows() * t.cols() == t.d.node->num_elements() && ir::distinct_cells(*t.d.node, t.d.index, cells);
}

ir::Op rounding_op(ir::NarrowFormat f) {
  switch (f) {
    case ir::NarrowFormat::BF16: return ir::Op::RoundBf16;
    case ir::NarrowFormat::F16: return ir::Op::RoundF16;
    case ir::NarrowFormat::TF32: return ir::Op::RoundTf32;
    case ir::NarrowFormat::None: break;
  }
  return ir::Op::Identity;
}

// The nodes promised rounded (TensorNode::rounded_to) that `s` writes otherwise than with their
// rounding op: a tensor core must not read them as exact.
void collect_unrounded_writes(const ir::StmtRef& s, std::set<const ir::TensorNode*>& out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ir::Seq>) {
          for (const auto& y : x.stmts) collect_unrounded_writes(y, out);
        } else if constexpr (std::is_same_v<T, ir::For>) {
          collect_unrounded_writes(x.body, out);
        } else if constexpr (std::is_same_v<T, ir::If>) {
          collect_unrounded_writes(x.body, out);
        } else if constexpr (std::is_same_v<T, ir::TileMma>) {
          collect_unrounded_writes(x.fallback, out);
        } else if constexpr (std::is_same_v<T, ir::Set>) {
          if (x.node->rounded_to == ir::NarrowFormat::None) return;
          const auto* apply = std::get_if<ir::Apply>(&x.value->node);
          if (apply == nullptr || apply->op != rounding_op(x.node->rounded_to)) out.insert(x.node.get());
        } else if constexpr (std::is_same_v<T, ir::SetDynamic>) {
          if (x.node->rounded_to != ir::NarrowFormat::None) out.insert(x.node.get());
        }
      },
      s->node);
}

// How deep `s` nests thread loops (Workgroup, WorkgroupReduce): the thread slots it uses.
int thread_slots(const ir::StmtRef& s) {
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    int most = 0;
    for (const auto& x : q->stmts) most = std::max(most, thread_slots(x));
    return most;
  }
  if (const auto* i = std::get_if<ir::If>(&s->node)) return thread_slots(i->body);
  if (const auto* f = std::get_if<ir::For>(&s->node)) {
    const bool thread = f->axis == ir::AxisType::Workgroup || f->axis == ir::AxisType::WorkgroupReduce;
    return thread_slots(f->body) + (thread ? 1 : 0);
  }
  return 0;
}

// What statements of a block do to the nodes (from the legality oracle's access collection).
struct NodeUse {
  std::set<const ir::TensorNode*> writes, touches;
  bool threads = false;  // a loop bound to the block's threads takes part

  NodeUse() = default;
  NodeUse(const detail::LoopAccesses& accesses, bool threads_) : threads(threads_) {
    for (const detail::Access& a : accesses.accesses) {
      touches.insert(a.node.get());
      if (a.write) writes.insert(a.node.get());
    }
  }
  // Whether running `later` after these needs the cells they wrote visible to it, or these must
  // read their cells before `later` overwrites them.
  bool conflicts_with(const NodeUse& later) const {
    const auto meets = [](const std::set<const ir::TensorNode*>& a, const std::set<const ir::TensorNode*>& b) {
      return std::any_of(a.begin(), a.end(), [&](const ir::TensorNode* n) { return b.count(n) != 0; });
    };
    return meets(writes, later.touches) || meets(later.writes, touches);
  }
  void add(const NodeUse& other) {
    writes.insert(other.writes.begin(), other.writes.end());
    touches.insert(other.touches.begin(), other.touches.end());
    threads = threads || other.threads;
  }
};

// The statements of a block that all its threads run (a kernel's statement outside its thread
// loops: a Grid loop's body, serial loops there or at the kernel's top, and the bodies of Ifs
// there) that use thread loops, ordered for a GPU, where a block runs its threads at once (the
// interpreter and the CPU run the statements one after the other):
// - a run of statements outside the thread loops that write nodes, and set no local that another
//   statement reads (each thread needs its own copy of that), runs on the block's first thread
//   only, in `block_slots` nested Workgroup loops of one iteration: every thread runs what is
//   outside its thread loops, so each would repeat the writes (an accumulation added once per
//   thread, concurrently); likewise a statement whose thread loops bind fewer slots than the
//   block has runs on the first thread of the others;
// - a statement there that writes nodes and sets a local another statement reads can run
//   neither way: a ScheduleError;
// - a barrier goes wherever a statement touches cells that statements since the last barrier
//   wrote, or writes cells they touched, and thread loops take part: else a thread of a second
//   Workgroup loop may read a cell before another thread of the first one wrote it;
// - `repeats` (the body of a serial loop): a barrier also ends the body when its end writes
//   what its start touches in the next iteration, or the reverse;
// - an If's body is ordered the same way, inside the If (its own barriers do not count outside
//   it: the If may be skipped).
// Every thread reaches each barrier: loop bounds are constants, and an If whose condition may
// differ between the threads (ir::same_in_every_thread) is `divergent`: a barrier needed
// there is a ScheduleError (the order cannot be kept), never a hang.
class BlockOrder {
 public:
  BlockOrder(int block_slots, bool divergent) : block_slots_(block_slots), divergent_(divergent) {}

  ir::StmtRef ordered(const ir::StmtRef& body, bool repeats) const {
    Pass pass(*this);
    for (const ir::StmtRef& x : ir::flatten_seq(body)) pass.add(x);
    pass.finish(repeats);
    return pass.changed ? ir::seq(std::move(pass.out)) : body;
  }

 private:
  int block_slots_;
  bool divergent_;  // under an If that some threads of the block may skip

  // One body being ordered: the statements so far, what they did since the last barrier.
  struct Pass {
    const BlockOrder& order;
    std::vector<ir::StmtRef> out;
    NodeUse since_barrier, head;  // head: the statements before the body's first barrier
    bool in_head = true, changed = false;
    std::vector<ir::StmtRef> first_thread;  // the open run of statements for the first thread
    NodeUse first_thread_use, before_first_thread;  // its accesses; those since the barrier before it

    explicit Pass(const BlockOrder& o) : order(o) {}

    void add(ir::StmtRef x) {
      if (std::holds_alternative<ir::Barrier>(x->node)) {
        close_first_thread();
        since_barrier = NodeUse{};
        in_head = false;
        out.push_back(x);
        return;
      }
      const detail::LoopAccesses accesses = detail::collect_accesses(x);
      NodeUse use(accesses, thread_slots(x) > 0);
      if (!use.threads && !use.writes.empty()) {
        if (!accesses.shared_local_writes.empty()) throw_repeated_writes(x);
        return add_first_thread(x, use);
      }
      close_first_thread();
      if (const auto* i = std::get_if<ir::If>(&x->node); i != nullptr && use.threads) {
        const BlockOrder inside(order.block_slots_, order.divergent_ || !ir::same_in_every_thread(i->condition, {}));
        const ir::StmtRef body_in_order = inside.ordered(i->body, false);
        if (body_in_order != i->body) x = ir::if_then(i->condition, body_in_order), changed = true;
      }
      if (const ir::StmtRef padded = use.threads ? on_every_slot(x) : x; padded != x) x = padded, changed = true;
      if ((use.threads || since_barrier.threads) && since_barrier.conflicts_with(use)) barrier();
      note(use);
      out.push_back(x);
    }

    void finish(bool repeats) {
      close_first_thread();
      if (repeats && (since_barrier.threads || head.threads) && since_barrier.conflicts_with(head)) barrier();
    }

    // `x` joins the open run for the first thread, unless what ran before the run needs a barrier
    // before `x` (a new run then starts after one).
    void add_first_thread(const ir::StmtRef& x, NodeUse use) {
      use.threads = changed = true;
      if (!first_thread.empty() && before_first_thread.conflicts_with(use)) close_first_thread();
      if (first_thread.empty()) {
        if (since_barrier.conflicts_with(use)) barrier();
        before_first_thread = since_barrier;
      }
      first_thread.push_back(x);
      first_thread_use.add(use);
    }
    // `x`, whose thread loops bind fewer slots than the block has (slots bind from the innermost
    // loop), in one-iteration Workgroup loops for the others: it runs on their first threads
    // only, instead of once per thread of them.
    ir::StmtRef on_every_slot(ir::StmtRef x) const {
      for (int k = thread_slots(x); k < order.block_slots_; ++k)
        x = ir::for_loop(ir::fresh_symbol(), 0, 1, x, ir::AxisType::Workgroup);
      return x;
    }
    void close_first_thread() {
      if (first_thread.empty()) return;
      changed = true;
      out.push_back(on_every_slot(ir::seq(std::move(first_thread))));
      note(first_thread_use);
      first_thread.clear();
      first_thread_use = NodeUse{};
    }

    void note(const NodeUse& use) {
      since_barrier.add(use);
      if (in_head) head.add(use);
    }
    // `x`, outside the block's thread loops, writes nodes and sets a local declared outside it,
    // which other statements read: every thread needs its own copy of the local, so every thread
    // would run it, repeating its writes (an accumulation added once per thread). On the first
    // thread only, the others would read a local they never set.
    [[noreturn]] static void throw_repeated_writes(const ir::StmtRef& x) {
      throw ScheduleError("a statement outside the block's thread loops writes nodes and sets a local declared "
                          "outside it, which other statements read: every thread of the block would run it, "
                          "repeating its writes; keep the loops around it Serial, or bind no Workgroup loop beside "
                          "it:\n" + ir::print_stmt(x));
    }
    void barrier() {
      if (order.divergent_)
        throw ScheduleError(
            "thread loops under an If whose condition may differ between a block's threads (it reads memory or "
            "names a thread index) hand cells to each other: they need a barrier, which threads that skip the If "
            "would never reach; make the If's condition depend on block and serial indices only, or keep the "
            "loops Serial");
      out.push_back(ir::barrier());
      since_barrier = NodeUse{};
      in_head = false;
      changed = true;
    }
  };
};

// Whether `body`, inside a thread loop, needs what BlockOrder would give it there: statements
// outside its own thread loops that write (the inner slots' threads would repeat them), or a
// barrier between them (which a thread loop's guard could make some threads skip).
bool needs_order_inside_threads(const ir::StmtRef& body, bool repeats) {
  try {
    return BlockOrder(std::min(thread_slots(body), 3), false).ordered(body, repeats) != body;
  } catch (const ScheduleError&) {  // a barrier under a divergent If
    return true;
  }
}

// `s` with its thread loops (Workgroup, WorkgroupReduce) serial.
ir::StmtRef without_thread_loops(const ir::StmtRef& s) {
  struct Serial : ir::TreeMapper {
    ir::StmtRef map_stmt(const ir::StmtRef& x) override {
      const ir::StmtRef y = map_children(x);
      const auto* f = std::get_if<ir::For>(&y->node);
      if (f == nullptr || (f->axis != ir::AxisType::Workgroup && f->axis != ir::AxisType::WorkgroupReduce)) return y;
      ir::For serial = *f;
      serial.axis = ir::AxisType::Serial;
      return make(std::move(serial));
    }
  };
  return Serial{}.map_stmt(s);
}

class Lowering {
 public:
  Lowering(const ir::Target& target, const ir::StmtRef& body) : target_(target) {
    if (!target.gpu_mma_formats.empty()) collect_unrounded_writes(body, unrounded_);
  }

  // The top-level statements (nested sequences included) are where kernels start.
  ir::StmtRef routine_body(const ir::StmtRef& s) {
    at_kernel_top_ = true;
    return stmt(s);
  }

  ir::StmtRef stmt(const ir::StmtRef& s) {
    if (const auto* q = std::get_if<ir::Seq>(&s->node)) return seq(*q);
    if (const auto* f = std::get_if<ir::For>(&s->node)) return loop(*f);
    const bool opens_kernel = at_kernel_top_;
    at_kernel_top_ = false;  // a Grid loop under an If or in a tile is no kernel's top
    if (const auto* i = std::get_if<ir::If>(&s->node)) {
      if (opens_kernel && gpu()) block_slots_ = std::min(thread_slots(i->body), 3);
      const bool divergent = in_block() && !ir::same_in_every_thread(i->condition, {});
      divergent_ifs_ += divergent ? 1 : 0;
      const ir::StmtRef body = stmt(i->body);
      divergent_ifs_ -= divergent ? 1 : 0;
      const ir::StmtRef lowered = body == i->body ? s : ir::if_then(i->condition, body);
      // A kernel that is an If: one block (its Grid loops, if any, turned Serial), ordered inside the If.
      if (opens_kernel && in_block() && block_slots_ > 0) return BlockOrder(block_slots_, false).ordered(lowered, false);
      return lowered;
    }
    if (const auto* t = std::get_if<ir::TileMma>(&s->node)) return tile(*t, opens_kernel);
    return s;  // scalars' local scopes hold no annotated loops (validate_parallel)
  }

 private:
  const ir::Target& target_;
  std::set<const ir::TensorNode*> unrounded_;  // see collect_unrounded_writes
  int grid_depth_ = 0, thread_depth_ = 0;
  int block_slots_ = 0;  // the thread slots of the kernel being lowered (thread_slots of its statement)
  int divergent_ifs_ = 0;  // Ifs of the block, around the statement, that some of its threads may skip
  bool at_kernel_top_ = false;  // the statement being lowered may start a chain of Grid loops

  bool gpu() const { return target_.workgroups && target_.gpu.max_threads_per_block > 0; }
  // Outside a GPU kernel's thread loops (in its Grid loops or not: a kernel without them is one
  // block): where every thread of the block runs each statement.
  bool in_block() const { return gpu() && thread_depth_ == 0; }

  // The tensor cores `t` may run on: ir::tensor_core_format, with no operand written unrounded
  // in this routine, and a blocking of whole MMA tiles the device can launch.
  ir::NarrowFormat tensor_core_format(const ir::TileMma& t) const {
    const ir::NarrowFormat f = ir::tensor_core_format(t, target_);
    if (f == ir::NarrowFormat::None || unrounded_.count(t.a.node.get()) != 0 || unrounded_.count(t.b.node.get()) != 0)
      return ir::NarrowFormat::None;
    const ir::TileBlocking b = ir::fitted_mma_blocking(target_.gpu_mma_tile, f, t.rows(), t.cols(), t.steps());
    const bool fits = b.valid() && b.threads() <= target_.gpu.max_threads_per_block &&
                      b.shared_bytes(4) <= target_.gpu.max_shared_bytes;
    if (!fits) return ir::NarrowFormat::None;
    if (logging::debug_level() >= 1)
      logging::info("tensor cores: matmul tile " + t.d.node->debug_name() + " += " + t.a.node->debug_name() + " * " +
                    t.b.node->debug_name() + " (" + std::to_string(t.rows()) + " x " + std::to_string(t.cols()) +
                    " x " + std::to_string(t.steps()) + ") runs as " + std::string(ir::narrow_format_name(f)) +
                    " MMA tiles, re-associating each cell's sum");
    return f;
  }

  // `b` with its staging pipelined where the target allows it (ir::pipelined_blocking), logged.
  ir::TileBlocking pipelined(const ir::TileMma& t, const ir::TileBlocking& b) const {
    const ir::TileBlocking out = ir::pipelined_blocking(b, target_);
    if (out.async_copy && logging::debug_level() >= 1)
      logging::info("async copies: matmul tile " + t.d.node->debug_name() + " += " + t.a.node->debug_name() + " * " +
                    t.b.node->debug_name() + " stages its slices in two buffers, the next one's copies (cp.async) " +
                    "in flight while the block computes the current one");
    return out;
  }

  ir::StmtRef seq(const ir::Seq& q) {
    std::vector<ir::StmtRef> out;
    const bool top = at_kernel_top_;
    for (const auto& x : q.stmts) {
      at_kernel_top_ = top;
      out.push_back(stmt(x));
    }
    at_kernel_top_ = false;
    fold_zero_starts(out);
    return ir::seq(std::move(out));
  }

  // A ZeroOut right before a tile that overwrites its node whole: the tile starts at zero.
  void fold_zero_starts(std::vector<ir::StmtRef>& stmts) const {
    if (grid_depth_ > 0) return;
    for (std::size_t k = 0; k + 1 < stmts.size(); ++k) {
      const auto* zero = std::get_if<ir::ZeroOut>(&stmts[k]->node);
      const auto* t = std::get_if<ir::TileMma>(&stmts[k + 1]->node);
      if (!zero || !t || t->zero_start || t->d.node != zero->node || !covers_output(*t)) continue;
      ir::TileMma started = *t;
      started.zero_start = true;
      stmts[k + 1] = ir::tile_mma(std::move(started));
      stmts.erase(stmts.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }

  ir::StmtRef loop(ir::For f) {
    const bool opens_kernel = at_kernel_top_;
    at_kernel_top_ = false;
    if (f.axis == ir::AxisType::Grid && gpu()) {
      // Blocks of one launch: only a chain of Grid loops from a top-level statement, at most
      // one per slot (a Grid loop under any other loop would need a grid-wide barrier between
      // its parent's iterations, which no GPU has).
      if (!opens_kernel || grid_depth_ >= 3) f.axis = ir::AxisType::Serial;
    } else if (f.axis == ir::AxisType::Grid) {
      const bool parallel = target_.parallel_runtime && grid_depth_ == 0 && f.end - f.begin >= 2;
      if (!parallel) {
        f.axis = ir::AxisType::Serial;
      } else {
        f.chunks = target_.grid_chunks > 0 ? std::min(target_.grid_chunks, f.end - f.begin) : 0;
        f.team = target_.threads;
      }
    }
    // A GPU thread's vector loop (whole-vector loads and stores, the lanes' arithmetic one by one)
    // or a CPU's SIMD loop; any other runs serially.
    if (f.axis == ir::AxisType::Vectorized &&
        !(gpu() ? ir::gpu_vector_loop(f, target_) : ir::vector_form(f, target_) != ir::VectorForm::None))
      f.axis = ir::AxisType::Serial;
    const bool thread_loop = f.axis == ir::AxisType::Workgroup || f.axis == ir::AxisType::WorkgroupReduce;
    // A block has three thread dimensions: deeper thread loops run inside one thread.
    if (thread_loop && (!target_.workgroups || thread_depth_ >= 3)) f.axis = ir::AxisType::Serial;
    const bool threads = f.axis == ir::AxisType::Workgroup || f.axis == ir::AxisType::WorkgroupReduce;
    const bool grid = f.axis == ir::AxisType::Grid;
    if (opens_kernel && gpu()) block_slots_ = std::min(thread_slots(f.body), 3);
    grid_depth_ += grid ? 1 : 0;
    thread_depth_ += threads ? 1 : 0;
    const auto body = ir::flatten_seq(f.body);
    at_kernel_top_ = grid && body.size() == 1;  // the next Grid loop of the chain
    f.body = stmt(f.body);
    if (in_block() && thread_slots(f.body) > 0) {
      f.body = BlockOrder(block_slots_, divergent_ifs_ > 0).ordered(f.body, !grid);
    } else if (gpu() && thread_depth_ > 0 && thread_slots(f.body) > 0 && needs_order_inside_threads(f.body, !threads)) {
      // Inside a thread loop the inner thread loops run serially instead: each thread of the
      // outer slots then runs the body in order, with no barrier under a guarded thread loop.
      f.body = without_thread_loops(f.body);
      if (logging::debug_level() >= 1)
        logging::info("GPU lowering: thread loops nested in a thread loop run serially, since the statements "
                      "beside them would need ordering between threads");
    }
    at_kernel_top_ = false;
    grid_depth_ -= grid ? 1 : 0;
    thread_depth_ -= threads ? 1 : 0;
    return make(std::move(f));
  }

  // On a GPU a tile is blocked where it can be its own launch: a top-level statement or the body
  // of a chain of at most two Grid loops (the tile's blocks take slot 0).
  ir::StmtRef tile(ir::TileMma t, bool opens_kernel) {
    if (gpu() && opens_kernel && grid_depth_ < 3 && ir::runs_as_gpu_tile(t, target_)) {
      t.blocking = ir::blocking_for_tile(target_, t.rows(), t.cols(), t.steps());
      if (const ir::NarrowFormat f = tensor_core_format(t); f != ir::NarrowFormat::None)
        t.blocking = ir::fitted_mma_blocking(target_.gpu_mma_tile, f, t.rows(), t.cols(), t.steps());
      t.blocking = pipelined(t, t.blocking);
      t.team = 1;
      return ir::tile_mma(std::move(t));
    }
    t.blocking = {};
    if (!ir::runs_as_kernel(t, target_)) return t.zero_start ? ir::seq({ir::zero_out(t.d.node), t.fallback}) : t.fallback;
    t.team = grid_depth_ > 0 || !target_.parallel_runtime ? 1 : target_.threads;
    return ir::tile_mma(std::move(t));
  }
};

}  // namespace

ir::LoweredRoutine lower_for_target(const ir::LoweredRoutine& routine, const ir::Target& target) {
  ir::LoweredRoutine out = routine;
  try {
    out.body = Lowering(target, routine.body).routine_body(routine.body);
  } catch (const ScheduleError& e) {
    throw ScheduleError("final lowering of routine '" + routine.name + "' for target " + target.backend + ": " + e.what());
  }
  try {
    validate_parallel(out);
  } catch (const ScheduleError& e) {
    // Schedules are validated when they are applied; one that reaches this round unsound is a
    // compiler bug, and printing it serially would hide it.
    throw InternalError("final lowering of routine '" + routine.name + "' for target " + target.backend +
                        ": a parallel annotation fails validate_parallel: " + e.what());
  }
  return out;
}

}  // namespace cannl::schedule
