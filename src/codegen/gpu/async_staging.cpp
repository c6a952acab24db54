// The copies of a pipelined tile's staging (async_staging.h).
#include "codegen/gpu/async_staging.h"

#include "cannl/ir/target.h"
#include "codegen/clike/tile_origin.h"
#include "codegen/gpu/tile_addressing.h"

namespace cannl::codegen {

int async_copy_cells(const ir::TileMma& t, const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
                     bool along_cells, std::int64_t block, std::int64_t bk, std::int64_t pitch) {
  const ir::TileGroups groups = ir::tile_groups(t);
  const std::vector<ir::TileAxis>& run = along_cells ? cells : groups.steps;
  const std::vector<ir::TileAxis>& across = along_cells ? groups.steps : cells;
  // A row of the slice starts 16-byte aligned (the stage too: pitch times whole rows) and holds
  // whole groups; each group's first cell is a multiple of four from the tile's origin.
  const std::int64_t row = along_cells ? block : bk;
  if (pitch % 4 != 0 || row % 4 != 0) return 1;
  return ir::async_copy_elements(t, o, run, across);
}

namespace {

// How the threads walk `s`'s slice: copies along its rows for 16 bytes, else along the
// operand's unit stride; `per_row` copies of each of `rows` rows.
struct Walk {
  bool along_cells;
  std::int64_t per_row, rows;
};

Walk walk_of(const AsyncStaging& s, std::int64_t bk) {
  const bool along_cells = s.elements == 4 ? s.along_cells : s.threads_along_cells;
  return {along_cells, (along_cells ? s.block : bk) / s.elements, along_cells ? bk : s.block};
}

}  // namespace

std::int64_t async_copies_per_thread(const AsyncStaging& s, std::int64_t threads, std::int64_t bk) {
  const Walk w = walk_of(s, bk);
  return (w.per_row * w.rows + threads - 1) / threads;
}

void print_async_copies(BodyPrinter& p, const ir::TileMma& t, const AsyncStaging& s, const std::string& k0,
                        const std::string& stage_offset, std::int64_t threads, std::int64_t bk) {
  const ir::TileGroups groups = ir::tile_groups(t);
  const std::string ix = p.index_type();
  const Walk w = walk_of(s, bk);
  const bool threads_along_cells = w.along_cells;
  const std::int64_t per_row = w.per_row, slow = w.rows;
  const std::string position = "(cannl_e % " + std::to_string(per_row) + ")" +
                               (s.elements == 1 ? "" : " * " + std::to_string(s.elements));
  const std::string row = "cannl_e / " + std::to_string(per_row);
  p.line("for (" + ix + " cannl_e = cannl_tid; cannl_e < " + std::to_string(slow * per_row) + "; cannl_e += " +
         std::to_string(threads) + ") {");
  p.indent();
  p.line("const " + ix + " cannl_x = " + (threads_along_cells ? position : row) + ", cannl_kk = " +
         (threads_along_cells ? row : position) + ";");
  p.line("const " + ix + " cannl_cell = " + s.first + " + cannl_x, cannl_step = " + k0 + " + cannl_kk;");
  // Guards only where a block or slice can reach past the tile; a group of four is inside or
  // outside whole (the tile's cells and steps come in whole groups where copies take four).
  std::string inside;
  if (s.extent % s.block != 0) inside = "cannl_cell < " + std::to_string(s.extent);
  if (t.steps() % bk != 0) inside += (inside.empty() ? "" : " && ") + std::string("cannl_step < ") + std::to_string(t.steps());
  const ir::TileOperand& o = *s.operand;
  const std::string offset = group_offset(*s.cells, o, "cannl_cell") + " + " + group_offset(groups.steps, o, "cannl_step");
  const std::string at = s.along_cells ? "cannl_kk * " + std::to_string(s.pitch) + " + cannl_x"
                                       : "cannl_x * " + std::to_string(s.pitch) + " + cannl_kk";
  const std::string bytes = std::to_string(4 * s.elements);
  const std::string queue = s.queue.empty() ? "" : ", " + s.queue;
  const std::string source = p.names().node(*o.node) + " + (" + p.offset(*o.node, at_tile_origin(o.index, t)) + " + ";
  const std::string dst = s.slice + " + (" + stage_offset + " + " + at + ")";
  if (inside.empty()) {
    p.line("cannl_cp_async" + bytes + "(" + dst + ", " + source + offset + "), " + bytes + queue + ");");
  } else {
    // Outside the tile the copy reads no byte; its address stays the tile's first cell.
    p.line("const int cannl_in = " + inside + ";");
    p.line("cannl_cp_async" + bytes + "(" + dst + ", " + source + "(cannl_in ? " + offset + " : 0)), cannl_in ? " + bytes +
           " : 0" + queue + ");");
  }
  close_block(p);
}

}  // namespace cannl::codegen
