#pragma once
// Hand-made GPU schedules at random, for the fuzzers of the GPU path (on the interpreter with
// its race checker, tests/schedule/gpu_random_programs_test.cpp, and on the GPU backend,
// tests/gpu/gpu_random_programs_test.cpp): random loops retyped Grid / Workgroup, split into
// Grid x Workgroup or Grid x Grid, consumers fused into the nests that produce what they read
// (a Grid body of several statements, whose thread loops may hand cells to each other), Grid
// loops over buckets of a scatter's rows, WorkgroupReduce loops where the GPU keeps the serial
// loop's bits (block reductions of max and min, integer ones, and any loop not in that form, which
// runs serially on a block's first thread), and the reshaping transforms a tuner's trace mixes in
// (Swap, Pad, Partition, Unroll, Privatize, Stage): whatever `apply` accepts (proven races are
// refused; unproven ones are the user's assertion).
//
//   std::mt19937_64 rng(5);
//   AnnotationCounts counts;
//   const ir::LoweredRoutine r = annotate_at_random(original, rng, 6, counts);
#include <algorithm>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "cannl/ir/block_reduction.h"
#include "cannl/ir/dtype.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/error.h"

namespace cannl::schedule::testing {

struct AnnotationCounts {
  int accepted = 0, bucketed = 0, fused = 0, reshaped = 0, reductions = 0;
};

// Whether `s` holds a scatter (SetDynamic: the optimizer's form of an embedding's backward).
inline bool has_scatter(const ir::StmtRef& s) {
  bool found = false;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) { found = found || std::holds_alternative<ir::SetDynamic>(x.node); });
  return found;
}

// The loops of `r` that enclose a scatter: where a BucketScatter may go.
inline std::vector<ir::Symbol> loops_around_scatters(const ir::LoweredRoutine& r) {
  std::vector<ir::Symbol> out;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& x) {
    if (const auto* f = std::get_if<ir::For>(&x.node); f && has_scatter(f->body)) out.push_back(f->index);
  });
  return out;
}

// The loops of `r`, outermost first.
inline std::vector<ir::Symbol> loops_of(const ir::LoweredRoutine& r) {
  std::vector<ir::Symbol> out;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& x) {
    if (const auto* f = std::get_if<ir::For>(&x.node)) out.push_back(f->index);
  });
  return out;
}

// The nodes `s` writes (by id, once each in the order first written).
inline std::vector<int> nodes_written(const ir::StmtRef& s) {
  std::vector<int> out;
  const auto add = [&](const ir::NodeRef& n) {
    if (std::find(out.begin(), out.end(), n->id) == out.end()) out.push_back(n->id);
  };
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    if (const auto* set = std::get_if<ir::Set>(&x.node)) add(set->node);
    if (const auto* dynamic = std::get_if<ir::SetDynamic>(&x.node)) add(dynamic->node);
  });
  return out;
}

// The loop of `r` whose index is `s`.
inline const ir::For& loop_named(const ir::LoweredRoutine& r, ir::Symbol s) {
  const ir::For* found = nullptr;
  ir::for_each_stmt(r.body, [&](const ir::Stmt& x) {
    if (const auto* f = std::get_if<ir::For>(&x.node); f && f->index == s) found = f;
  });
  internal_check(found != nullptr, "random_annotations: no such loop");
  return *found;
}

// One of the other transforms a tuner's trace mixes with the annotations, on loop `s` of `r`.
inline Transform reshaping(const ir::LoweredRoutine& r, ir::Symbol s, const std::function<std::size_t(std::size_t)>& pick) {
  const ir::For& loop = loop_named(r, s);
  const auto extent = loop.end - loop.begin;
  const auto nodes = ir::nodes_of(r.body);
  const int node = nodes[pick(nodes.size())]->id;
  switch (pick(6)) {
    case 0: {
      const auto body = ir::flatten_seq(loop.body);
      const auto* inner = body.size() == 1 ? std::get_if<ir::For>(&body[0]->node) : nullptr;
      return Swap{s, inner ? inner->index : s};
    }
    case 1: return Pad{s, 2 + static_cast<std::int64_t>(pick(3))};
    case 2: return Partition{s, {loop.begin + static_cast<std::int64_t>(pick(static_cast<std::size_t>(extent) + 1))}};
    case 3: return Unroll{s, false};
    case 4: return Privatize{node, s};
    default: return Stage{node, s, false};
  }
}

// Whether loop `s` of `r` retyped WorkgroupReduce keeps the serial loop's bits on a GPU (what the
// fuzzers compare): a block reduction's tree re-associates a float sum or product (the annotation
// licenses it), and is exact for max, min and integers; a loop in any other form runs serially.
inline bool exact_as_block_reduction(const ir::LoweredRoutine& r, ir::Symbol s) {
  const auto form = ir::block_reduction(loop_named(r, s));
  return !form || form->accum == ir::Op::Max || form->accum == ir::Op::Min || !ir::is_float(form->dtype);
}

// A FuseEpilogue to try: a top-level loop of `r` and a node its body writes (-1: none), picked
// by `pick`.
inline std::pair<ir::Symbol, int> epilogue_to_fuse(const ir::LoweredRoutine& r,
                                                   const std::function<std::size_t(std::size_t)>& pick) {
  std::vector<const ir::For*> top;
  for (const auto& x : ir::flatten_seq(r.body))
    if (const auto* f = std::get_if<ir::For>(&x->node)) top.push_back(f);
  if (top.empty()) return {ir::Symbol{}, -1};
  const ir::For* anchor = top[pick(top.size())];
  const std::vector<int> written = nodes_written(anchor->body);
  return {anchor->index, written.empty() ? -1 : written[pick(written.size())]};
}

// `r` after up to `steps` random hardware annotations that apply accepted (counted in `counts`).
inline ir::LoweredRoutine annotate_at_random(ir::LoweredRoutine r, std::mt19937_64& rng, int steps,
                                             AnnotationCounts& counts) {
  const auto pick = [&](std::size_t count) { return static_cast<std::size_t>(rng() % count); };
  for (int step = 0; step < steps; ++step) {
    const auto loops = loops_of(r);
    if (loops.empty()) break;
    const ir::Symbol s = loops[pick(loops.size())];
    const ir::AxisType type = pick(2) == 0 ? ir::AxisType::Grid : ir::AxisType::Workgroup;
    try {
      if (pick(5) == 0) {
        r = schedule::apply(r, reshaping(r, s, pick));
        ++counts.reshaped;
      } else if (pick(4) == 0) {
        const auto [anchor, target] = epilogue_to_fuse(r, pick);
        if (target < 0) continue;
        r = schedule::apply(r, FuseEpilogue{target, anchor});
        ++counts.fused;
      } else if (const auto around = loops_around_scatters(r); !around.empty() && pick(3) == 0) {
        r = schedule::apply(r, bucket_scatter(around[pick(around.size())], 1 + static_cast<std::int64_t>(pick(4)), ir::AxisType::Grid));
        ++counts.bucketed;
      } else {
        // A split's inner Grid loop puts its remainder guard inside the block: an If every
        // thread of it decides alike, around whatever thread loops the body holds.
        const ir::AxisType hardware =
            type == ir::AxisType::Workgroup && pick(4) == 0 && exact_as_block_reduction(r, s) ? ir::AxisType::WorkgroupReduce : type;
        r = pick(3) == 0 ? schedule::apply(r, split(s, 1 + static_cast<std::int64_t>(pick(4)), ir::AxisType::Grid, hardware))
                         : schedule::apply(r, Retype{s, hardware});
        counts.reductions += hardware == ir::AxisType::WorkgroupReduce ? 1 : 0;
      }
      ++counts.accepted;
    } catch (const ScheduleError&) {
    }
  }
  return r;
}

}  // namespace cannl::schedule::testing
