#pragma once
// Helpers of the GPU schedule tests: a GPU target with CUDA's launch limits, and the segments of
// a fissioned routine run in launch order on the interpreter (each kernel body a routine of its
// own under the routine's statics, each Zero segment a zeroed buffer), starting from the memory
// run_interp starts from.
//
//   auto segments = fission(lower_for_target(default_gpu_schedule(r, {gpu_test_target()}), t), t);
//   EXPECT_EQ(compare(run_interp(r), run_segments(r, segments), Tolerance::Bitwise), "");

#include <algorithm>

#include "cannl/ir/target.h"
#include "cannl/schedule/fission.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {

/// CUDA sm_90's limits.
inline ir::GpuLimits cuda_limits() { return {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32}; }

inline ir::Target gpu_test_target(ir::GpuLimits limits = cuda_limits()) {
  ir::Target t = ir::generic_gpu_target(limits);
  t.backend = "gpu-test";
  return t;
}

/// Runs `segments` (of `routine`) in order on the interpreter and returns every node's bytes.
inline NodeBytes run_segments(const ir::LoweredRoutine& routine, const std::vector<Segment>& segments) {
  interp::testing::TestMemory mem;
  const auto nodes = ir::nodes_of(routine.body);
  for (const auto& n : nodes) {
    mem.add(n);
    if (n->dtype != ir::DType::F32) continue;
    std::vector<float> values(static_cast<std::size_t>(n->num_elements()));
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = test_value(n->id, k);
    mem.fill(n, values);
  }
  interp::Buffers buffers = mem.buffers();
  for (const Segment& s : segments) {
    if (s.kind == Segment::Kind::Zero) {
      const auto span = buffers.at(s.zeroed->id);
      std::fill(span.begin(), span.end(), std::byte{0});
      continue;
    }
    const ir::LoweredRoutine kernel{routine.name + "_kernel", s.body, routine.statics};
    ir::verify(kernel);
    interp::run(kernel, buffers, {});
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
