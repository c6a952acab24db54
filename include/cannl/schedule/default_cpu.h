#pragma once
// The default CPU schedule (semantics-backend.md 8.3 `default_cpu`, issue 6 "Automatic fast
// paths"): without a tuner, every routine compiled for the cc backend gets
//  * matmul-like nests (a perfect i x j x k nest around d += a * b) tensorized into TileMma, the
//    outer row loop split off first so the tiles can run in parallel;
//  * the outermost loop of each nest that the legality oracle proves parallel retyped to Grid,
//    when the loop has at least `min_parallel` elements of work;
//  * innermost contiguous elementwise loops (one store, no reduction) retyped to Vectorized.
// Every annotation is proven legal and none re-associates, so results stay bitwise equal to
// the serial program.
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
  std::int64_t grid_chunks = 8;       // rows of a tensorized nest are split into about this many chunks
  bool tensorize = true;
  bool vectorize = true;
  /// min_parallel from config key `cpu_schedule_min_parallel`.
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
