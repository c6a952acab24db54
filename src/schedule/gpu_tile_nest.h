#pragma once
// Matmul-like nests as GPU tiles (the default GPU schedule's first choice for a nest): the nest
// becomes one TileMma, which the final lowering round blocks for the device
// (ir::TileMma::blocking: staged in shared memory, register-blocked, its own launch), and the
// loops left around it, at most two and all provably parallel (a batched matmul's batch), become
// Grid loops on the slots above the tile's. Forms, in order:
//  * plain and batched: the nest's three innermost loops are the matmul (any order);
//  * folded (convolutions, weight gradients, contractions over several loops): the CPU planner's
//    reorder and fold (matmul_nest.h), its cost model judging panels of the target's block.
// Every step is a checked transform and each cell keeps its order of steps: bitwise the nest.
//
//   if (auto tiled = tile_gpu_nest(r, top, options)) r = tiled->routine;

#include <optional>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/default_gpu.h"

namespace cannl::schedule::detail {

/// `r` with the perfect nest under top-level loop `top` tiled for the GPU, or nullopt (the
/// routine unchanged) when the nest is no matmul the target would block (ir::runs_as_gpu_tile),
/// when its fitted block would have fewer threads than `min_tile_threads`, or when loops that
/// cannot be Grid loops would stay around the tile. With the transforms that made it.
std::optional<ScheduledRoutine> tile_gpu_nest(const ir::LoweredRoutine& r, ir::Symbol top,
                                                const GpuScheduleOptions& options);

}  // namespace cannl::schedule::detail
