#pragma once
// Matrix-vector products whose matrix runs contiguously along the cells, not the steps: a tied
// lm_head `logits[v] = fma(x[d], wte[d, v], logits[v])` with v outer and d inner reads wte
// with a stride of a whole row per step. Swapping the loops makes the inner loop run along
// wte's rows (a vector fma over the cells), and splitting the cell loop first keeps each
// chunk's accumulators in the L2 cache and gives the chunks to the threads. Every cell still
// takes its steps in the same order, so the result is bitwise the plain nest's.
//
//   if (auto p = plan_strided_gemv(top)) r = apply(r, *p);

#include <optional>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule::detail {

/// For a perfect serial nest `for c: for r: d[.., c] = add(d[.., c], v)` (or fma(a, b, d)) in
/// f32, whose store is contiguous in c, with a matrix (a read moving with both loops) contiguous
/// in c and none contiguous in r: a Split of c into chunks (the largest divisor of c's extent in
/// [4096, 16384] that leaves at least 4 chunks) and the Swap of the chunk's cells below r; when the
/// extent has no such divisor, a Partition of c at the largest multiple of 64 that has one (plan
/// the head segment again afterwards); failing both, chunks down to 256 cells. nullopt for any
/// other nest.
std::optional<std::vector<Transform>> plan_strided_gemv(const ir::For& top);

}  // namespace cannl::schedule::detail
