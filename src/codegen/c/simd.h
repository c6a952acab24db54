#pragma once
// Explicit SIMD for the C dialect: GCC/Clang vector-extension types of f32 lanes, the prelude
// helpers built on them (splat, fused multiply-add, lane sum) and the declarations of the packed
// register-tiled f32 matmul. The matmul itself is a real C file, kernels/cannl_sgemm.c, that the
// cc backend compiles once per width, blocking and flags into a library the generated file links
// (sgemm_kernels.h).
//
// A width is given in bytes (64 = AVX-512, 32 = AVX2, 16 = NEON/SSE). The helpers use target
// intrinsics only for the fused multiply-add and fall back to fmaf per lane, so every target
// computes the same fused value.
//
//   SimdWidth w = simd_width(64);          // w.lanes == 16, w.type == "cannl_f32x16"
//   append_simd_helpers(helpers, w);        // cannl_f32x16_fma, the cannl_sgemm_x16 declaration, ...

#include <string>
#include <vector>

#include "cannl/ir/target.h"
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

struct SimdWidth {
  int bytes = 0;     // 16, 32 or 64
  int lanes = 0;     // f32 lanes: bytes / 4
  std::string type;  // "cannl_f32x16": the aligned vector type
};

/// The f32 vector of `bytes` bytes; InternalError unless bytes is 16, 32 or 64.
SimdWidth simd_width(int bytes);

/// Register-tile and cache-block sizes of the f32 matmul micro-kernel (ir::GemmShape: the target
/// record's, so the schedule's cost model and the kernels agree).
using GemmBlocking = ir::GemmShape;
/// The default blocking of width `w`: ir::cpu_target(w.bytes).gemm.
GemmBlocking gemm_blocking(const SimdWidth& w);

/// Name of the matmul driver for width `w`: "cannl_sgemm_x16", also the name of its kernel
/// library. Its C signature:
///   int cannl_sgemm_x16(int64_t m, int64_t n, int64_t k, float *d, int64_t drs, int64_t dcs,
///                        const float *a, int64_t ars, int64_t acs,
///                        const float *b, int64_t brs, int64_t bcs, int fused, int zero, int threads);
/// computes d[i*drs + j*dcs] += a[i*ars + p*acs] * b[p*brs + j*bcs] for p = 0..k-1 in increasing
/// order per cell, each update one fma (fused != 0) or a rounded multiply then a rounded add,
/// exactly like the scalar nest, so the result does not depend on blocking or thread count;
/// threads: 1 = serial, 0 = the OpenMP default team. zero != 0: d's cells are zero before the
/// call (a memset the printer dropped), so each register tile starts from zero instead of a load;
/// +0 plus the first product is that product, so the result is the same bits.
/// Returns 0, or nonzero when it could not allocate its packing buffers (d is then partly
/// updated); it never aborts.
/// Its folded form (TileMma with outer loops), same rounding, order and return guarantees:
///   int cannl_sgemm_x16_nd(int nr, const int64_t *rext, const int64_t *rd, const int64_t *ra,
///                           int nc, const int64_t *cext, const int64_t *cd, const int64_t *cb,
///                           int nk, const int64_t *kext, const int64_t *ka, const int64_t *kb,
///                           float *d, const float *a, const float *b, int fused, int zero, int threads);
/// rows are the row-major product of nr loops (extents rext, element strides rd in d and ra in
/// a), columns of nc loops (strides in d and b), steps of nk loops (strides in a and b, outermost
/// first, the order each cell takes its steps in). Rows and columns must address distinct cells.
std::string gemm_function(const SimdWidth& w);

/// Appends the vector type, its helpers and the declarations of the matmul of width `w` to `out`.
void append_simd_helpers(std::vector<PreludeHelper>& out, const SimdWidth& w);

/// Appends `cannl_grid_chunks(extent, requested)`: the chunk count of a Grid loop.
void append_parallel_helpers(std::vector<PreludeHelper>& out);

}  // namespace cannl::codegen
