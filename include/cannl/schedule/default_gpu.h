#pragma once
// The default GPU schedule (semantics-backend.md 8.3): for each top-level nest whose parallelism
// the legality oracle proves, one Grid loop (blocks) and one Workgroup loop (threads). A single
// parallel loop is split by the block size (clamped to the device's limits): outer Grid, inner
// Workgroup; with a second parallel loop inside the first, the inner becomes the Workgroup loop
// (split when longer than a block) so consecutive threads touch consecutive cells. Nests with
// fewer than `min_parallel` parallel iterations (unless the nest is 16 times that much work),
// reduction loops and loops driving a dynamic index stay serial; a long scatter gets a parallel
// loop over buckets of its target rows instead (BucketScatter). With `reassociate`, a long
// add-accumulation into few cells (or into a store several iterations share, a convolution's
// input gradient) is first staged into partials on many threads and a second nest adding them.
// Every decision is a transform of transforms.h, so the scheduled routine means the same as the
// input on every backend (the interpreter runs it serially).
//
//   auto r = schedule::default_gpu_schedule(routine, {.target = backend->target()});

#include <cstdint>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule {

struct GpuScheduleOptions {
  /// The GPU's target record: `gpu` limits clamp the block size.
  ir::Target target;
  /// Threads per block (config `gpu_schedule_block_size`), clamped to target.gpu.
  std::int64_t block_size = 256;
  /// Nests with fewer parallel iterations stay serial (config `gpu_schedule_min_parallel`).
  std::int64_t min_parallel = 64;
  /// A long add-accumulation into few cells may become partials over blocks of its reduction
  /// (computed by many threads) and a second nest adding them in order: deterministic but
  /// re-associated (config `gpu_schedule_reassociate`, which the GPU backend passes; false here
  /// keeps every kernel bitwise the serial routine).
  bool reassociate = false;
  /// Matmul-like nests become tiles that the final lowering round blocks for the GPU
  /// (ir::TileMma::blocking; config `gpu_schedule_tiles`): plain and batched matmuls, and nests
  /// whose loops fold into one (convolutions, weight gradients), bitwise the nest.
  bool tiles = true;
  /// A nest whose threads each walk a long scatter (an embedding gradient: rows chosen at run
  /// time, repeating) gets a parallel loop over buckets of the target rows (BucketScatter):
  /// kAutoScatterBuckets sizes it from target.gpu.compute_units (nothing where that is unknown),
  /// 0 never, n > 0 that many buckets (at most the rows). Bitwise the serial scatter
  /// (config `gpu_scatter_buckets`: auto, off or a count).
  static constexpr std::int64_t kAutoScatterBuckets = -1;
  std::int64_t scatter_buckets = kAutoScatterBuckets;
  /// With `reassociate` and tiles, a tile with fewer blocks than this many per compute unit is
  /// split along its reduction into chunks (split-K) for about this many; 0 never
  /// (config `gpu_split_k_blocks_per_unit`).
  std::int64_t split_k_blocks_per_unit = 4;
  /// An elementwise nest's innermost parallel loop split into vectors of
  /// target.gpu_vector_bytes / 4 lanes, a Vectorized loop each thread runs as whole-vector loads
  /// and stores (ir::gpu_vector_loop; bitwise the serial loop): Auto where the device stays full
  /// at a thread per vector, On wherever the nest allows and keeps min_parallel threads (tests,
  /// tuning), Off never (config `gpu_schedule_vectors`: auto, on, off).
  enum class Vectors { Off, Auto, On };
  Vectors vectors = Vectors::Auto;

  /// The options for `target` from the config keys `gpu_schedule_block_size`,
  /// `gpu_schedule_min_parallel`, `gpu_schedule_reassociate`, `gpu_schedule_tiles`,
  /// `gpu_scatter_buckets`, `gpu_split_k_blocks_per_unit` and `gpu_schedule_vectors` (what a GPU
  /// backend schedules with, and what the tuner records).
  static GpuScheduleOptions from_config(const ir::Target& target);
};

/// The default GPU schedule with the transforms that make it: replaying them
/// (schedule::record, then replay) gives the same routine.
ScheduledRoutine plan_default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options);

/// plan_default_gpu_schedule(routine, options).routine
ir::LoweredRoutine default_gpu_schedule(const ir::LoweredRoutine& routine, const GpuScheduleOptions& options);

}  // namespace cannl::schedule
