#pragma once
// Launch geometry of one GPU kernel, read off its annotated loops (semantics-backend.md 8.1).
// Slots are positional: among the loops of one kind on a path of the nest, the innermost binds
// slot 0 (`.x`), the next slot 1 (`.y`), then slot 2 (`.z`); Workgroup and WorkgroupReduce share
// the block slots. A slot's launch extent is the largest extent of the loops bound to it, so a
// shorter loop in the same slot is guarded (`if (index < end)`) by the printer. A blocked matmul
// tile (TileMma::blocking) binds Grid slot 0 (its blocks) and Workgroup slot 0 (its threads)
// itself and adds its staged slices to the shared memory.
//
//   for i0 in [0, 64) Grid: for i1 in [0, 256) Workgroup: c[i0, i1] = ...
//   kernel_geometry(body) == {.grid = {64, 1, 1}, .block = {256, 1, 1}, slots {i0: 0, i1: 0}}

#include <array>
#include <cstdint>
#include <map>

#include "cannl/ir/loop_ir.h"

namespace cannl::ir {

struct KernelGeometry {
  std::array<std::int64_t, 3> grid = {1, 1, 1};   // blocks per slot
  std::array<std::int64_t, 3> block = {1, 1, 1};  // threads per slot
  /// Bytes of workgroup-shared memory the kernel declares (Local nodes staged into it).
  std::int64_t shared_bytes = 0;
  /// The slot (0, 1, 2) of every Grid / Workgroup / WorkgroupReduce loop, by symbol id.
  std::map<int, int> slot_of;

  std::int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
  std::int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
  /// Whether the kernel is one thread (no annotated loop).
  bool serial() const { return blocks() == 1 && threads_per_block() == 1; }
  bool operator==(const KernelGeometry&) const = default;
};

/// The geometry of the kernel whose body is `body`. Throws InternalError when a kind has more
/// than three slots on one path or an annotated loop does not start at 0 (validate_parallel
/// rejects both earlier).
KernelGeometry kernel_geometry(const StmtRef& body);

}  // namespace cannl::ir
