#pragma once
// The default CPU schedule (semantics-backend.md 8.3 `default_cpu`, issue 6 "Automatic fast
// paths"): without a tuner, every routine compiled for the cc backend gets
//  * perfect nests around d += a * b whose loops play matmul roles (convolutions, weight
//    gradients, contractions over several loops: schedule/matmul_nest.h) reordered, without
//    changing any cell's order of updates, so that three of them form a tile, then tensorized;
//  * matmul-like nests (a perfect i x j x k nest around d += a * b) tensorized into TileMma, the
//    outer row loop split off first so the tiles can run in parallel (with `fuse_epilogues`, the
//    elementwise tails right after it, bias and activation, fused into its row chunks);
//  * the outermost loop of each nest that the legality oracle proves parallel retyped to Grid,
//    when the loop has at least `min_parallel` elements of work;
//  * when `reassociate` licenses it, innermost f32 add / max / min reductions over a contiguous
//    stream (extent >= min_reassociate_extent) in the interleaved Split_reduce form, its lane
//    loops Vectorized: the re-association is explicit in the loop IR, so the interpreter on the
//    scheduled routine computes the same bits as the C backend (but not the serial program's);
//  * innermost contiguous elementwise loops (one store, no reduction) retyped to Vectorized.
// Every other annotation is proven legal and none re-associates: with `reassociate` off the
// results stay bitwise equal to the serial program.
//
//   ScheduledRoutine s = default_cpu_schedule(routine, CpuScheduleOptions::from_config());
//   backend.compile(s.routine);   // s.transforms is the schedule as data (traceable)

#include <cstdint>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule {

struct CpuScheduleOptions {
  std::int64_t min_parallel = 16384;  // config cpu_schedule_min_parallel
  std::int64_t min_tile_work = 512;   // i*j*k below this stays a plain nest
  /// A nest reordered to become a tile (convolutions, weight gradients) needs this much i*j*k
  /// per tile: the C printer renders smaller tiles as the plain nest, and the reordered nest
  /// runs no faster than the lowered one.
  std::int64_t min_reordered_tile_work = 4096;
  std::int64_t grid_chunks = 8;       // rows of a tensorized nest are split into about this many chunks
  bool tensorize = true;
  bool vectorize = true;
  /// Elementwise tails of a split matmul join its row chunks (FuseEpilogue). Off: the C printer
  /// renders a Grid chunk loop holding only a tile as one GEMM call over every row (B packed
  /// once); a fused tail splits it into a call per chunk, and `cannl bench mlp --threads 1` went
  /// from 13.7 to 25 ms per step. Worth enabling once a GEMM applies the tail at store-back.
  bool fuse_epilogues = false;
  bool reassociate = true;                   // config cpu_schedule_reassociate
  std::int64_t reassociate_lanes = 64;       // partials per reduction: 4 vector chains x 16 lanes
  /// Shorter reductions stay serial. 128 takes a GPT-2 head's attention rows (a masked max over
  /// 128 keys: gpt2_mini's step 89.6-99.2 -> 83.3-91.3 ms on 2 threads, five A/B pairs).
  std::int64_t min_reassociate_extent = 128;
  /// min_parallel and reassociate from config keys `cpu_schedule_min_parallel`,
  /// `cpu_schedule_reassociate`.
  static CpuScheduleOptions from_config();
};

struct ScheduledRoutine {
  ir::LoweredRoutine routine;
  std::vector<Transform> transforms;  // applied in order to the input routine
};

/// The default CPU schedule of `routine` (see the file comment).
ScheduledRoutine default_cpu_schedule(const ir::LoweredRoutine& routine, const CpuScheduleOptions& options);

/// The routine a cc-backend compile should use: the default CPU schedule when config
/// `automatic_cpu_schedule` is true (the default), else `routine` unchanged. At debug >= 2 the
/// result is written to build_files/<exe>/<routine>.sched.ll.
ir::LoweredRoutine maybe_default_cpu_schedule(const ir::LoweredRoutine& routine);

}  // namespace cannl::schedule
