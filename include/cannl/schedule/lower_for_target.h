#pragma once
// The schedule's final lowering round: every decision that depends on the target is written
// into the loop IR, so a printer only spells what the routine says (and meets nothing it has to
// decline, merge, re-check or drop).
//
//  * TileMma: a tile the target cannot run as its micro-kernel (no SIMD, not an f32 `+=` over
//    three distinct f32 nodes, operands moving along loops they are broadcast over, less work
//    than `min_tile_work`) becomes its fallback nest; the others get their team (1 inside a
//    Grid loop, else the target's team when it has a parallel runtime). On a GPU a tile that
//    ir::runs_as_gpu_tile and can be a launch of its own (a top-level statement, or the body of
//    a chain of at most two Grid loops) gets its blocking (the target's gpu_tile fitted to the
//    tile, ir::fitted_blocking); any other becomes its nest. Such a tile runs on tensor cores
//    (a TileBlocking::mma blocking, ir::fitted_mma_blocking of the target's gpu_mma_tile) when
//    both operands are promised exact in a format the target multiplies
//    (ir::tensor_core_format), the routine writes them only with that format's rounding op, and
//    the blocking fits the device: the re-association of each cell's sum this licenses is
//    logged at debug level 1 and named in the generated code.
//  * A ZeroOut followed by a tile that overwrites every cell of that node: the ZeroOut goes and
//    the tile starts at zero (`TileMma::zero_start`).
//  * Grid loops on a CPU: Serial without a parallel runtime, inside another Grid loop, or over
//    fewer than two iterations; else their chunk count and team. On a GPU (`workgroups` and
//    launch limits): blocks, kept only in a chain of at most three from a top-level statement
//    (each the whole body of the one before); any other Grid loop becomes Serial (a GPU has no
//    grid-wide barrier between the iterations of a loop around it). Every parallel loop left
//    must pass validate_parallel: a schedule that got this far and fails it is a bug
//    (InternalError), never a loop quietly printed serial.
//  * Vectorized loops without an exact vector form on the target become Serial (every loop on
//    a GPU target for now), and so do Workgroup loops on a target without workgroups (a CPU
//    runs them inside their Grid chunk) and those under three others (a block has three
//    thread dimensions).
//
//   ir::LoweredRoutine final = lower_for_target(scheduled, backend->target());
//   codegen::emit_c(final, params, {.target = backend->target()});

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::schedule {

ir::LoweredRoutine lower_for_target(const ir::LoweredRoutine& routine, const ir::Target& target);

}  // namespace cannl::schedule
