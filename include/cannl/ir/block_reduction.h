#pragma once
// The shape of a WorkgroupReduce loop that a GPU renders as a cooperative block reduction: its
// body is one accumulation `d[idx] = accum(d[idx], v(r))` with accum add, mul, max or min, `idx`
// free of the loop's index r, and v reading neither d nor a local scope or a dynamic row. The
// threads of the loop's slot each compute one v(r) (the neutral where r is past the loop's end),
// combine them in a fixed balanced tree in workgroup-shared memory (the WorkgroupReduce
// annotation licenses the re-association), and one thread accumulates the total into d.
// Anything else runs as a serial loop on the slot's first thread, which is always correct.
//
//   for r in [0, 100) workgroup_reduce: s[i] = add(s[i], x[i, r])   ->  a BlockReduction

#include <optional>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

struct BlockReduction {
  NodeRef target;              // d
  std::vector<AxisIndex> index;  // idx
  Op accum = Op::Add;
  DType dtype = DType::F32;    // the accumulation's compute dtype
  ScalarRef value;             // v(r)
};

std::optional<BlockReduction> block_reduction(const For& loop);

/// Bytes of workgroup-shared memory one rendered block reduction of `threads_per_block` threads
/// takes: a slot per thread of the widest type (8 bytes).
inline std::int64_t block_reduction_bytes(std::int64_t threads_per_block) { return 8 * threads_per_block; }

}  // namespace cannl::ir
