#pragma once
// The tuner's search space: the seeds it starts from and the menu of moves a beam round tries on
// a candidate (see cannl/tune/tune.h). Everything here only proposes; the search drops what the
// legality oracle rejects, then compiles, checks and times the rest.
//
//   auto seeds = seed_candidates(optimized, backend.target());   // default first, then serial, sweeps
//   auto moves = menu_moves(optimized, best, backend.target());

#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"
#include "cannl/tune/tune.h"

namespace cannl::tune {

/// The backend's default schedule of `optimized` priced for `target`, as a trace: the default
/// GPU schedule on targets with workgroups, else the default CPU schedule (config
/// automatic_gpu_schedule / automatic_cpu_schedule off: no steps).
schedule::ScheduleTrace default_trace(const ir::LoweredRoutine& optimized, const ir::Target& target);

/// Blockings of a GPU matmul tile worth measuring besides the target's own: small blocks for
/// small or skinny matmuls, the classic 64 x 64 and 128 x 128 register-blocked pipelines, deep
/// and shallow k slices; only those the device can launch (threads per block, shared memory).
std::vector<ir::TileBlocking> gpu_tile_sketches(const ir::Target& target);

/// Tensor-core blockings (Target::gpu_mma_tile sizes: bm, bn, bk and a warp's wm x wn cells as
/// tm, tn) worth measuring besides the target's own, for a GPU with tensor cores and a tile of
/// rounded operands: 64 x 64 to 256 x 128 cells per workgroup, 32 x 32 to 64 x 64 per warp,
/// 32- or 64-step slices; only those whole in MMA tiles that the device can launch.
std::vector<ir::TileBlocking> gpu_mma_sketches(const ir::Target& target);

/// The default schedule (label "default", always first), the serial baseline ("serial", not on a
/// GPU), then with `sweep_target` the GPU schedule option seeds (gpu_schedule_option_seeds) and
/// one-field sweeps of the target that matter for the routine: teams and Grid chunks when it has
/// parallel loops or tiles, the matmul register tile, cache blocks and tile threshold when it has
/// tiles; on a GPU target with tiles, the blocking sketches (gpu_tile_sketches, and
/// gpu_mma_sketches when a tile's operands are rounded for tensor cores).
std::vector<Candidate> seed_candidates(const ir::LoweredRoutine& optimized, const ir::Target& base, bool sweep_target);

/// The default GPU schedule of `optimized` under other settings of the schedule's own options
/// (schedule::GpuScheduleOptions, from the config keys): half and twice the block size, the
/// scatter buckets off, 64 and 1024, split-K for 0, 2 and 16 blocks per compute unit, and without
/// the re-association licence (bitwise kernels, no staged partials or split-K) where it holds. Only those whose plan differs from `defaults`
/// and from each other: a routine without scatters gets no bucket seeds. Labels name the key
/// ("default gpu_scatter_buckets off"). Nothing on a target without workgroups.
std::vector<Candidate> gpu_schedule_option_seeds(const ir::LoweredRoutine& optimized, const ir::Target& target,
                                                 const schedule::ScheduleTrace& defaults);

/// Moves from `from`: its target's one-field neighbours (team, chunks, blocking) with the same
/// transforms, and one more transform appended to its own (Unroll, Retype to Vectorized or Grid,
/// Split into vector-wide pieces, Swap of a perfect pair, Privatize, Stage (hoisted too, for
/// constant operands: literals, link-time data), and with the re-association licence an
/// interleaved Split_reduce).
/// `optimized`: the routine of `from`'s placement arm.
std::vector<Candidate> menu_moves(const ir::LoweredRoutine& optimized, const Candidate& from, const ir::Target& base);

}  // namespace cannl::tune
