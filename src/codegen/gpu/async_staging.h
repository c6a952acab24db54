#pragma once
// The copies of a pipelined tile's staging (TileBlocking::async_copy), shared by the scalar and
// the tensor-core tile printers: one operand's slice at a step into one of its two stages, by
// asynchronous copies of 16 bytes where the operand's layout is proven to allow them
// (ir::async_copy_elements), else of 4; the cells outside the tile are copied from no byte
// (src-size 0: zeros), so the edges take no branch.
//
//   for (cannl_e = cannl_tid; cannl_e < 256; cannl_e += 256) {
//     const int32_t cannl_x = (cannl_e % 16) * 4, cannl_kk = cannl_e / 16;
//     ...
//     cannl_cp_async16(cannl_tb_i4 + (cannl_next + cannl_kk * 68 + cannl_x), b + (.. + (cannl_in ? .. : 0)), cannl_in ? 16 : 0);
//   }

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "codegen/clike/body_printer.h"

namespace cannl::codegen {

/// One operand's staged slice, both stages in one shared array: element (x, kk) of a stage (x a
/// row of A or a column of B within the block, kk a step of the slice) at kk * pitch + x
/// (`along_cells`) or x * pitch + kk, the second stage `stage_elements` further.
struct AsyncStaging {
  std::string slice;
  const ir::TileOperand* operand = nullptr;
  const std::vector<ir::TileAxis>* cells = nullptr;  // the operand's rows (A) or columns (B)
  std::string first;                                 // the block's first cell
  std::int64_t block = 0, extent = 0;                // cells per block, cells of the tile
  bool along_cells = true;
  std::int64_t pitch = 0, stage_elements = 0;
  /// Cells per copy: 4 (16 bytes, consecutive along the slice's layout) or 1.
  int elements = 1;
  /// With single cells: consecutive threads copy consecutive cells (else steps), whichever the
  /// operand's unit stride runs along (coalesced).
  bool threads_along_cells = true;
  /// The last argument of every copy and wait: the dialect's queue (GpuDialect::async_copy_queue).
  std::string queue;
};

/// Cells per copy of `o`'s slice laid out as `along_cells` says, for a block of `block` cells
/// and `bk`-step slices: 4 where ir::async_copy_elements proves the operand's groups of four
/// aligned along the slice's rows and the rows hold whole, aligned groups (`pitch`, the block or
/// the slice a multiple of four); else 1.
int async_copy_cells(const ir::TileMma& t, const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
                     bool along_cells, std::int64_t block, std::int64_t bk, std::int64_t pitch);

/// The most copies of `s`'s slice one of `threads` threads issues.
std::int64_t async_copies_per_thread(const AsyncStaging& s, std::int64_t threads, std::int64_t bk);

/// This thread's (cannl_tid of `threads`) copies of `s`'s slice at step `k0` into the stage at
/// element `stage_offset` (texts).
void print_async_copies(BodyPrinter& p, const ir::TileMma& t, const AsyncStaging& s, const std::string& k0,
                        const std::string& stage_offset, std::int64_t threads, std::int64_t bk);

}  // namespace cannl::codegen
