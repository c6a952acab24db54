#pragma once
// Helpers of the GPU schedule tests: a GPU target with CUDA's launch limits, and the segments of
// a fissioned routine run in launch order on the interpreter (each kernel body a routine of its
// own under the routine's statics, each Zero segment a zeroed buffer), starting from the memory
// run_interp starts from. The interpreter runs a kernel's statements one after the other, which
// hides a kernel that is only right with a grid-wide barrier between them; the emulated orders
// run each kernel the way a GPU may instead: block by block (first to last, or last to first),
// and in a block the statements between two barriers thread by thread.
//
//   auto segments = fission(lower_for_target(default_gpu_schedule(r, {gpu_test_target()}), t), t);
//   EXPECT_EQ(compare(run_interp(r), run_segments(r, segments, Order::BlocksReversed), Tolerance::Bitwise), "");

#include <algorithm>

#include "cannl/interp/race_check.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/fission.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/loop_tree.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {

/// CUDA sm_90's limits.
inline ir::GpuLimits cuda_limits() { return {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32}; }

inline ir::Target gpu_test_target(ir::GpuLimits limits = cuda_limits()) {
  ir::Target t = ir::generic_gpu_target(limits);
  t.backend = "gpu-test";
  return t;
}

/// How a kernel's blocks and threads run: as the interpreter runs the loops, watched by a race
/// checker (cannl/interp/race_check.h), or one block (and in a block one thread per phase between
/// barriers) after the other, in increasing or decreasing index order.
enum class Order { Interpreter, BlocksForward, BlocksReversed };

/// A kernel as a serial program running it block by block (see Order): each annotated loop
/// becomes a guard on the index of its hardware slot, the kernel's statements split into phases
/// at its (top-level) barriers, each phase run by every thread of a block in turn.
class GpuEmulation : ir::TreeMapper {
 public:
  GpuEmulation(const ir::KernelGeometry& g, bool reversed) : g_(g), reversed_(reversed) {
    for (auto* syms : {&blocks_, &threads_})
      for (auto& s : *syms) s = ir::fresh_symbol();
  }

  ir::StmtRef kernel(const ir::StmtRef& body) {
    std::vector<ir::StmtRef> phases, phase;
    auto close = [&] {
      ir::StmtRef run = ir::seq(phase);
      for (std::size_t d = 0; d < 3; ++d) run = ir::for_loop(threads_[d], 0, g_.block[d], run);
      phases.push_back(run);
      phase.clear();
    };
    internal_check(!has_nested_barrier(body), "GpuEmulation: barriers inside statements are not emulated");
    // Statements writing no node (replicated definitions of locals) run again in each phase:
    // a GPU thread keeps its locals across barriers.
    std::vector<ir::StmtRef> locals;
    for (const auto& x : ir::flatten_seq(body)) {
      if (std::holds_alternative<ir::Barrier>(x->node)) {
        close();
        phase = locals;
      } else {
        phase.push_back(map_stmt(x));
        bool writes = false;
        ir::for_each_stmt(x, [&](const ir::Stmt& y) {
          writes = writes || std::holds_alternative<ir::Set>(y.node) || std::holds_alternative<ir::SetDynamic>(y.node) ||
                   std::holds_alternative<ir::ZeroOut>(y.node) || std::holds_alternative<ir::TileMma>(y.node);
        });
        if (!writes) locals.push_back(phase.back());
      }
    }
    close();
    ir::StmtRef run = ir::seq(phases);
    for (std::size_t d = 0; d < 3; ++d) run = ir::for_loop(blocks_[d], 0, g_.grid[d], run);
    return run;
  }

 private:
  const ir::KernelGeometry& g_;
  bool reversed_;
  std::array<ir::Symbol, 3> blocks_, threads_;

  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* t = std::get_if<ir::TileMma>(&s->node); t && t->blocking.blocked()) {
      // A blocked tile computes its cells across the blocks and threads of slot 0 (each cell on
      // one thread, in its order of steps): emulated as the first block's first thread
      // computing them all, the others nothing.
      const auto first = [](ir::Symbol hw) {
        return ir::apply(ir::Op::Cmplt, ir::DType::I64, {ir::embed_index(it(hw)), ir::constant(1, ir::DType::I64)});
      };
      return ir::if_then(first(blocks_[0]), ir::if_then(first(threads_[0]), s));
    }
    const auto* f = std::get_if<ir::For>(&s->node);
    const auto slot_at = f ? g_.slot_of.find(f->index.id) : g_.slot_of.end();
    if (slot_at == g_.slot_of.end()) return map_children(s);
    internal_check(f->axis != ir::AxisType::WorkgroupReduce, "GpuEmulation: cooperative reductions are not emulated");
    const auto slot = static_cast<std::size_t>(slot_at->second);
    const bool grid = f->axis == ir::AxisType::Grid;
    const ir::Symbol hw = (grid ? blocks_ : threads_)[slot];
    const std::int64_t launched = (grid ? g_.grid : g_.block)[slot];
    const ir::AxisIndex index = reversed_ ? ir::AxisIndex{{{-1, hw}}, launched - 1} : it(hw);
    const ir::StmtRef body = detail::substitute_symbol(map_stmt(f->body), f->index, index);
    const auto below = ir::apply(ir::Op::Cmplt, ir::DType::I64,
                                 {ir::embed_index(index), ir::constant(static_cast<double>(f->end), ir::DType::I64)});
    return ir::if_then(below, body);
  }
};

/// Whether kernel `body` holds a WorkgroupReduce loop, which runs as the printer renders it (a
/// tree with barriers, or serially on the first thread): GpuEmulation does not emulate it.
inline bool has_block_reduction(const ir::StmtRef& body) {
  bool found = false;
  ir::for_each_stmt(body, [&](const ir::Stmt& x) {
    const auto* f = std::get_if<ir::For>(&x.node);
    found = found || (f != nullptr && f->axis == ir::AxisType::WorkgroupReduce);
  });
  return found;
}

/// Runs `segments` (of `routine`) in order on the interpreter and returns every node's bytes. In
/// the interpreter's order, and for a kernel with a nested barrier or a block reduction in the
/// others, each kernel is race-checked; a race is a test failure naming it.
inline NodeBytes run_segments(const ir::LoweredRoutine& routine, const std::vector<Segment>& segments,
                              Order order = Order::Interpreter, const std::vector<std::int64_t>& statics = {}) {
  interp::testing::TestMemory mem;
  const auto nodes = ir::nodes_of(routine.body);
  fill_test_memory(mem, nodes);
  interp::Buffers buffers = mem.buffers();
  for (const Segment& s : segments) {
    if (s.kind == Segment::Kind::Zero) {
      const auto span = buffers.at(s.zeroed->id);
      std::fill(span.begin(), span.end(), std::byte{0});
      continue;
    }
    const bool emulated =
        order != Order::Interpreter && !s.geometry.serial() && !has_nested_barrier(s.body) && !has_block_reduction(s.body);
    const ir::StmtRef body = emulated ? GpuEmulation(s.geometry, order == Order::BlocksReversed).kernel(s.body) : s.body;
    const ir::LoweredRoutine kernel{routine.name + "_kernel", body, routine.statics};
    ir::verify(kernel);
    if (!emulated && !s.geometry.serial() && interp::race_checkable(body)) {
      interp::KernelRaceCheck check(s.geometry, body);
      interp::run(kernel, buffers, statics, &check);
      EXPECT_EQ(check.race(), "") << ir::print_loop_ir(kernel);
    } else {
      interp::run(kernel, buffers, statics);
    }
  }
  NodeBytes out;
  for (const auto& n : nodes) out[n->id] = mem.read<std::byte>(n);
  return out;
}

/// How many segments are kernels of several top-level statements, and how many of those hold a
/// workgroup barrier (what the tests check fission really merged).
struct MergeCounts {
  int merged = 0, with_barrier = 0;
};
inline MergeCounts merge_counts(const std::vector<Segment>& segments) {
  MergeCounts c;
  for (const Segment& s : segments) {
    if (s.kind != Segment::Kind::Kernel || !std::holds_alternative<ir::Seq>(s.body->node)) continue;
    ++c.merged;
    const auto& stmts = std::get<ir::Seq>(s.body->node).stmts;
    c.with_barrier += std::any_of(stmts.begin(), stmts.end(), [](const ir::StmtRef& x) {
      return std::holds_alternative<ir::Barrier>(x->node);
    }) ? 1 : 0;
  }
  return c;
}

}  // namespace cannl::schedule::testing
