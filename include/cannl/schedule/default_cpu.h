#pragma once
// The default CPU schedule (semantics-backend.md 8.3 `default_cpu`): without a tuner, every routine compiled for the cc backend gets
//  * perfect nests around d += a * b whose loops play matmul roles (convolutions, weight
//    gradients, contractions over several loops: schedule/matmul_nest.h) reordered, without
//    changing any cell's order of updates, so that three of them form a tile, then tensorized;
//  * matmul-like nests (a perfect i x j x k nest around d += a * b) tensorized into TileMma over
//    all their rows (the final lowering round gives the tile the target's team); an outer column
//    loop, or the rows when `fuse_epilogues` fuses the elementwise tails right after the nest
//    (bias, activation) into its row chunks, is split off first for the Grid;
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
#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule {

struct CpuScheduleOptions {
  /// The backend's target record: its micro-kernel shape prices tiles, its min_tile_work is the
  /// default threshold below.
  ir::Target target = ir::cpu_target(64);
  std::int64_t min_parallel = 16384;  // config cpu_schedule_min_parallel
  /// i*j*k (times folded loops) below this stays a plain nest; 0: the target's min_tile_work.
  std::int64_t min_tile_work = 0;
  std::int64_t grid_chunks = 8;       // split rows / columns of a tensorized nest into about this many chunks
  bool tensorize = true;
  bool vectorize = true;
  /// Elementwise tails of a matmul join its row chunks (FuseEpilogue): the rows are split for
  /// the Grid, one GEMM call per chunk, which repacks B each time (off: one call over every row
  /// with the team, B packed once; see docs/ARCHITECTURE.md). Worth enabling once a GEMM applies
  /// the tail at store-back.
  bool fuse_epilogues = false;
  bool reassociate = true;                   // config cpu_schedule_reassociate
  /// Under `reassociate`: stride-1 convolution input gradients as transposed convolutions
  /// (GatherWindows) rather than staged partials (config cpu_schedule_gather_windows).
  bool gather_windows = false;
  /// Under `reassociate`: staged convolution input gradients whose partials exceed this many
  /// cells are staged per batch item when one item's fit (about a core's share of the cache), in
  /// `grid_chunks` blocks of items with partials each (schedule/window_nest.h).
  std::int64_t cached_partials_cells = std::int64_t{1} << 18;
  std::int64_t reassociate_lanes = 64;       // partials per reduction: 4 vector chains x 16 lanes
  /// Reductions shorter than `long_reduction_extent` take at most `short_reduction_lanes`
  /// partials (one vector): the partials' combine is a scalar tree with one step per lane, which
  /// for 64 lanes over a 128-long attention row costs several times the row's own work.
  std::int64_t short_reduction_lanes = 16;
  std::int64_t long_reduction_extent = 512;
  /// Shorter reductions stay serial. 128 takes a GPT-2 head's attention rows (a masked max over
  /// 128 keys).
  std::int64_t min_reassociate_extent = 128;
  /// min_parallel, reassociate and gather_windows from config keys `cpu_schedule_min_parallel`,
  /// `cpu_schedule_reassociate`, `cpu_schedule_gather_windows`.
  static CpuScheduleOptions from_config();
  /// min_tile_work, or the target's when it is 0.
  std::int64_t tile_threshold() const { return min_tile_work > 0 ? min_tile_work : target.min_tile_work; }
};

/// The default CPU schedule of `routine` (see the file comment).
ScheduledRoutine default_cpu_schedule(const ir::LoweredRoutine& routine, const CpuScheduleOptions& options);

/// The routine a CPU backend (cc) compiles for `target`: the default CPU schedule when config
/// `automatic_cpu_schedule` is true (the default), else `routine` unchanged. At debug >= 2 the
/// result is written to build_files/<exe>/<routine>.sched.ll.
ir::LoweredRoutine maybe_default_cpu_schedule(const ir::LoweredRoutine& routine,
                                              const ir::Target& target = ir::cpu_target(64));

}  // namespace cannl::schedule
