#pragma once
// The warp-level helpers a tensor-core tile calls (GpuDialect::spells_warp_mma), per dialect:
//  * CUDA: inline PTX, `ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16` and
//    `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}...f32` / `m16n8k8 ... tf32`, and the f16
//    conversion `cvt.rn.f16.f32` (cannl_mma_f16_bits);
//  * OpenCL: an emulation for tests on PoCL: each helper exchanges the warp's lanes' registers
//    (and ldmatrix's row addresses) through local memory between barriers and computes what
//    the instruction delivers, after the fragment tables of mma_fragments.h (the tables are
//    printed from them), with the steps of each cell summed in increasing order; its f16
//    conversions are exact-value bit operations.
// Every helper's text starts its definitions with `$P` (prelude.h).
//
//   std::vector<PreludeHelper> helpers; append_cuda_mma_helpers(helpers);

#include <vector>

#include "codegen/clike/prelude.h"

namespace cannl::codegen {

void append_cuda_mma_helpers(std::vector<PreludeHelper>& out);
void append_opencl_mma_emulation(std::vector<PreludeHelper>& out);

/// The extra arguments of the OpenCL emulation's helpers, which it declares at kernel scope:
/// `__local int cannl_xchg[32 * warps]` and `__local float cannl_mx[kOpenClMmaScratch * warps]`.
inline constexpr int kOpenClMmaScratch = 16 * 16 + 16 * 8;  // A and B of one m16n8k16 MMA

}  // namespace cannl::codegen
