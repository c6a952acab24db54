#pragma once
// The shape of a WorkgroupReduce loop that a GPU renders as a cooperative block reduction: its
// body is one accumulation `d[idx] = accum(d[idx], v(r))` with accum add, mul, max or min (a sum
// or product's operands either way round, or `fma(a(r), b(r), d[idx])`: a sum of the products,
// each rounded), `idx`
// free of the loop's index r, and v reading neither d nor a local scope or a dynamic row. The
// threads of the loop's slot each compute one v(r) (none where r is past the loop's end),
// combine them in a fixed balanced tree in workgroup-shared memory (the WorkgroupReduce
// annotation licenses the re-association), and one thread accumulates the total into d.
// Anything else runs as a serial loop on the slot's first thread, which is always correct.
//
// The accumulation may sit under a remainder guard `if (before + r < bound)` (a Split of a row
// that the block does not divide: 50257 vocabulary entries in slices of 256): the slice's last
// block then reduces only its first bound - before steps, as a shorter loop would.
//
// Strided: between the loop and the (guarded) accumulation, a perfect nest of serial loops
// (the other slices of a split row, other reduction loops): each thread first folds its own
// steps over them in their order, then the threads' partials meet in one tree. Every thread
// must have a step at the loops' first iterations (so every partial exists: under a guard,
// `before` mentions only those loops and holds at their begins), which a split row's first
// slice gives.
//
//   for r in [0, 100) workgroup_reduce: s[i] = add(s[i], x[i, r])   ->  a BlockReduction
//   for r in [0, 256) workgroup_reduce: if (256*o + r < 50257) s[i] = max(s[i], x[i, 256*o + r])
//                                                                    ->  one with a RowGuard
//   for r in [0, 256) workgroup_reduce: for q in [0, 197): if (256*q + r < 50257) s[i] = max(..)
//                                                                    ->  one with strided loop q

#include <optional>
#include <set>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

/// The iterations r of the loop with `before + r < bound` run; the others do nothing.
struct RowGuard {
  AxisIndex before;
  std::int64_t bound = 0;
};

struct BlockReduction {
  NodeRef target;              // d
  std::vector<AxisIndex> index;  // idx
  Op accum = Op::Add;
  DType dtype = DType::F32;    // the accumulation's compute dtype
  ScalarRef value;             // v(r)
  std::optional<RowGuard> guard;
  std::vector<const For*> strided;  // the serial loops each thread folds its steps over, outermost first
};

std::optional<BlockReduction> block_reduction(const For& loop);

/// Whether every thread of a block computes the same value for `condition` (an If's): it reads
/// no node and no local, and names none of `thread_indices` (the thread loops around it). Only
/// under such an If may a block's threads meet at a barrier, a thread that skipped it would hang
/// the others: the barriers schedule::lower_for_target places, and a block reduction's tree,
/// which the GPU printer and the race checker give a WorkgroupReduce loop there (under any
/// other If it runs on the slot's first thread).
bool same_in_every_thread(const ScalarRef& condition, const std::set<Symbol>& thread_indices);

/// Bytes of workgroup-shared memory one rendered block reduction of `threads_per_block` threads
/// takes: a slot per thread of the widest type (8 bytes).
inline std::int64_t block_reduction_bytes(std::int64_t threads_per_block) { return 8 * threads_per_block; }

}  // namespace cannl::ir
