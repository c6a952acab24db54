// Blocked matmul tiles of the GPU dialects (ir::TileMma::blocking): a classic shared-memory,
// register-blocked GEMM, one workgroup per bm x bn block of output cells.
//
//   __shared__ float cannl_ta_i4[16 * 65], cannl_tb_i4[16 * 65];       (at the kernel's top)
//   {
//     tid = threadIdx.x; blk = blockIdx.x; row0 = (blk / col_blocks) * 64; col0 = (blk % ..) * 64;
//     ty = tid / 16; tx = tid % 16;           // this thread's cells: rows ty + 16 m, columns tx + 16 n
//     acc[m * 4 + n] = d[cell] (or +0 with a zero start; 0 and never stored outside the tile)
//     for (k0 = 0; k0 < steps; k0 += 16) {
//       every thread copies its share of a[rows, k0 .. k0 + 16) and b[k0 .., cols] into the
//       staged slices (consecutive threads along the operand's unit stride; 0 outside the tile);
//       barrier;
//       for (kk = 0; kk < 16 (the last slice: what is left); ++kk): acc[m * 4 + n] = fma(a_m, b_n, acc[..])
//       barrier;
//     }
//     d[cell] = acc[m * 4 + n] for the cells inside the tile
//   }
//
// Bitwise the fallback: each cell starts from d's value (or +0, the ZeroOut the tile absorbed),
// takes its steps in increasing order, each one fma when the tile is `fused` and a rounded
// multiply then a rounded add otherwise (the dialects never contract: NVRTC --fmad=false,
// OpenCL FP_CONTRACT OFF), and the staging's zero fill is never added: the last slice's loop
// stops at the tile's steps (every loop has a constant length the device compiler unrolls).
// Folded tiles (an implicit im2col) find each row's, column's and step's offset by index
// arithmetic over their loops (outermost first, so steps keep nest order).
//
// Pipelined (TileBlocking::async_copy), each operand has two stages of its slice and the loop is
//     copies of slice 0 into stage 0 (cp.async); commit
//     for (k0 ...) { stage = slice's parity; wait for this thread's copies; barrier;
//                    if a next slice: its copies into the other stage; commit;
//                    the slice's steps from `stage` }
// one barrier per slice: it both publishes every thread's copies of this slice and ends every
// thread's reads of the other stage (the previous slice), which the next copies overwrite. The
// copies are of the operand's bits, zeros outside the tile, as the plain staging stores them.
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/clike/tile_origin.h"
#include "codegen/gpu/async_staging.h"
#include "codegen/gpu/gpu_dialect.h"
#include "codegen/gpu/tile_addressing.h"

namespace cannl::codegen {

namespace {

// A pipelined tile's staging of one operand (`o`, over `extent` `cells`, `block` per block):
// 16-byte copies where async_copy_cells proves them (rows padded to a multiple of four cells),
// else single cells with the bank-spreading pitch of the plain staging, walked along the
// operand's unit stride.
AsyncStaging pipelined_staging(const ir::TileMma& t, const ir::TileGroups& groups, const std::string& slice,
                               const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
                               const std::string& first, std::int64_t block, std::int64_t extent, std::int64_t bk) {
  AsyncStaging s{slice, &o, &cells, first, block, extent};
  s.elements = async_copy_cells(t, o, cells, true, block, bk, ir::TileBlocking::async_pitch(block));
  s.pitch = s.elements == 4 ? ir::TileBlocking::async_pitch(block) : block + 1;
  s.stage_elements = bk * s.pitch;
  s.threads_along_cells = !(fastest_stride(groups.steps, o) == 1 && fastest_stride(cells, o) != 1);
  return s;
}

// The start of a pipelined tile's slice at `k0`: its stage, the wait for this thread's copies
// and the barrier after them, then the next slice's copies into the other stage.
void print_pipelined_slice_start(BodyPrinter& p, const GpuDialect& d, const ir::TileMma& t, const AsyncStaging& a,
                                 const AsyncStaging& b, const std::string& k0, std::int64_t bk, std::int64_t threads) {
  const std::string ix = p.index_type();
  p.line("const int cannl_stage = (int)((" + k0 + " / " + std::to_string(bk) + ") % 2);");
  p.line("const " + ix + " cannl_sa = cannl_stage * " + std::to_string(a.stage_elements) + ", cannl_sb = cannl_stage * " +
         std::to_string(b.stage_elements) + ";");
  p.line("cannl_cp_async_wait_all(" + a.queue + ");");
  p.line(d.barrier());
  if (t.steps() <= bk) return;
  p.line("if (" + k0 + " + " + std::to_string(bk) + " < " + std::to_string(t.steps()) + ") {");
  p.indent();
  const std::string next = k0 + " + " + std::to_string(bk);
  print_async_copies(p, t, a, next, std::to_string(a.stage_elements) + " - cannl_sa", threads, bk);
  print_async_copies(p, t, b, next, std::to_string(b.stage_elements) + " - cannl_sb", threads, bk);
  p.line("cannl_cp_async_commit();");
  close_block(p);
}

}  // namespace

void GpuDialect::print_tile(BodyPrinter& p, const ir::TileMma& t) const {
  if (t.blocking.tensor_cores()) {
    print_mma_tile(p, t);
    return;
  }
  const ir::KernelGeometry* g = p.geometry();
  const ir::TileBlocking& b = t.blocking;
  internal_check(g != nullptr && b.valid(), "codegen: a matmul tile on a GPU without its blocking (the final "
                                            "lowering round leaves only blocked tiles to GPU dialects)");
  internal_check(g->block[0] == b.threads() && g->block[1] == 1 && g->block[2] == 1 && !p.divergent(),
                 "codegen: a blocked matmul tile shares its kernel's threads (fission launches it alone)");
  const ir::TileGroups groups = ir::tile_groups(t);
  const std::int64_t rows = t.rows(), cols = t.cols(), steps = t.steps();
  const std::int64_t col_blocks = (cols + b.bn - 1) / b.bn;
  const std::int64_t tx_count = b.bn / b.tn, ty_count = b.bm / b.tm;
  const std::string type = value_type(t.dtype), ix = p.index_type();
  const std::string zero = p.zero(t.dtype);
  const auto base = [&](const ir::TileOperand& o) {
    return p.names().node(*o.node) + "[" + p.offset(*o.node, at_tile_origin(o.index, t)) + " + ";
  };
  const std::string name = p.fresh_loop_name();
  const std::string as = "cannl_ta_" + name, bs = "cannl_tb_" + name;
  std::int64_t a_pitch = b.padded_rows(), b_pitch = b.padded_cols();
  const bool pipelined = b.async_copy;
  AsyncStaging a_async, b_async;
  if (pipelined) {
    internal_check(spells_async_copy(), "codegen: a pipelined tile on a dialect without asynchronous copies (the "
                                        "target's gpu_async_copy should be false)");
    a_async = pipelined_staging(t, groups, as, t.a, groups.rows, "cannl_row0", b.bm, rows, b.bk);
    b_async = pipelined_staging(t, groups, bs, t.b, groups.cols, "cannl_col0", b.bn, cols, b.bk);
    a_pitch = a_async.pitch;
    b_pitch = b_async.pitch;
    p.declare_at_kernel_scope(aligned_shared_array(type, as, 2 * a_async.stage_elements));
    p.declare_at_kernel_scope(aligned_shared_array(type, bs, 2 * b_async.stage_elements));
  } else {
    p.declare_at_kernel_scope(shared_array(type, as, b.bk * a_pitch));
    p.declare_at_kernel_scope(shared_array(type, bs, b.bk * b_pitch));
  }
  const auto copies = [&](const AsyncStaging& x) { return std::to_string(4 * x.elements) + "-byte for " + p.names().node(*x.operand->node); };
  p.line("/* matmul tile " + std::to_string(rows) + " x " + std::to_string(cols) + " x " + std::to_string(steps) +
         (t.folded() ? " (folded: implicit im2col)" : "") + ": blocks of " + std::to_string(b.bm) + " x " +
         std::to_string(b.bn) + " cells in " + std::to_string(b.bk) + "-step slices staged in shared memory, " +
         (pipelined ? "two stages, the next slice's asynchronous copies (cp.async, " + copies(a_async) + ", " +
                          copies(b_async) + ") in flight while the block computes the current one, "
                    : "") +
         std::to_string(b.tm) + " x " + std::to_string(b.tn) + " cells per thread" +
         (t.zero_start ? "; " + p.names().node(*t.d.node) + " starts at zero" : "") + " */");
  p.line("{");
  p.indent();
  const std::string tid = "cannl_tid", row0 = "cannl_row0", col0 = "cannl_col0", tx = "cannl_tx", ty = "cannl_ty";
  p.line("const " + ix + " " + tid + " = (" + ix + ")" + thread_index(0) + ";");
  p.line("const " + ix + " cannl_blk = (" + ix + ")" + block_index(0) + ";");
  p.line("const " + ix + " " + row0 + " = (cannl_blk / " + std::to_string(col_blocks) + ") * " + std::to_string(b.bm) + ";");
  p.line("const " + ix + " " + col0 + " = (cannl_blk % " + std::to_string(col_blocks) + ") * " + std::to_string(b.bn) + ";");
  p.line("const " + ix + " " + tx + " = " + tid + " % " + std::to_string(tx_count) + ";");
  p.line("const " + ix + " " + ty + " = " + tid + " / " + std::to_string(tx_count) + ";");
  // This thread's cells: rows ty + ty_count * m, columns tx + tx_count * n (neighbouring threads
  // on neighbouring columns: the staged reads hit distinct banks, the stores coalesce along d's
  // unit stride), with their offsets in d.
  const std::string d_rows = "cannl_dr", d_cols = "cannl_dc";
  p.line(ix + " " + d_rows + "[" + std::to_string(b.tm) + "], " + d_cols + "[" + std::to_string(b.tn) + "];");
  p.line("int cannl_in_rows[" + std::to_string(b.tm) + "], cannl_in_cols[" + std::to_string(b.tn) + "];");
  unrolled_for(p, "cannl_m", b.tm);
  p.line("const " + ix + " cannl_r = " + row0 + " + " + ty + " + " + std::to_string(ty_count) + " * cannl_m;");
  p.line("cannl_in_rows[cannl_m] = cannl_r < " + std::to_string(rows) + ";");
  p.line(d_rows + "[cannl_m] = cannl_in_rows[cannl_m] ? " + group_offset(groups.rows, t.d, "cannl_r") + " : 0;");
  close_block(p);
  unrolled_for(p, "cannl_n", b.tn);
  p.line("const " + ix + " cannl_c = " + col0 + " + " + tx + " + " + std::to_string(tx_count) + " * cannl_n;");
  p.line("cannl_in_cols[cannl_n] = cannl_c < " + std::to_string(cols) + ";");
  p.line(d_cols + "[cannl_n] = cannl_in_cols[cannl_n] ? " + group_offset(groups.cols, t.d, "cannl_c") + " : 0;");
  close_block(p);
  const std::string acc = "cannl_acc";
  p.line(type + " " + acc + "[" + std::to_string(b.tm * b.tn) + "];");
  unrolled_for(p, "cannl_m", b.tm);
  unrolled_for(p, "cannl_n", b.tn);
  const std::string cell = base(t.d) + d_rows + "[cannl_m] + " + d_cols + "[cannl_n]]";
  p.line(acc + "[cannl_m * " + std::to_string(b.tn) + " + cannl_n] = " +
         (t.zero_start ? zero : "cannl_in_rows[cannl_m] && cannl_in_cols[cannl_n] ? " + p.load(cell, t.d.node->dtype) + " : " + zero) +
         ";");
  close_block(p);
  close_block(p);
  // The staged slices: a[row0 + r, k0 + kk] at as[kk * a_pitch + r], b[k0 + kk, col0 + c] at
  // bs[kk * b_pitch + c]. Consecutive threads copy consecutive cells of the operand's fastest
  // direction (coalesced); the padded pitch keeps their shared-memory stores on distinct banks.
  const std::string k0 = "cannl_k0";
  if (pipelined) {
    // One slice's copies of both operands are in flight at a time.
    a_async.queue = b_async.queue = async_copy_queue(
        p, async_copies_per_thread(a_async, b.threads(), b.bk) + async_copies_per_thread(b_async, b.threads(), b.bk));
    print_async_copies(p, t, a_async, "0", "0", b.threads(), b.bk);
    print_async_copies(p, t, b_async, "0", "0", b.threads(), b.bk);
    p.line("cannl_cp_async_commit();");
  }
  p.line("for (" + ix + " " + k0 + " = 0; " + k0 + " < " + std::to_string(steps) + "; " + k0 + " += " +
         std::to_string(b.bk) + ") {");
  p.indent();
  const auto stage = [&](const std::string& slice, const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
                         const std::string& first, std::int64_t block, std::int64_t pitch, std::int64_t extent) {
    const bool along_steps = fastest_stride(groups.steps, o) == 1 && fastest_stride(cells, o) != 1;
    p.line("for (" + ix + " cannl_e = " + tid + "; cannl_e < " + std::to_string(b.bk * block) + "; cannl_e += " +
           std::to_string(b.threads()) + ") {");
    p.indent();
    if (along_steps) {
      p.line("const " + ix + " cannl_kk = cannl_e % " + std::to_string(b.bk) + ", cannl_x = cannl_e / " + std::to_string(b.bk) + ";");
    } else {
      p.line("const " + ix + " cannl_x = cannl_e % " + std::to_string(block) + ", cannl_kk = cannl_e / " + std::to_string(block) + ";");
    }
    p.line("const " + ix + " cannl_cell = " + first + " + cannl_x, cannl_step = " + k0 + " + cannl_kk;");
    const std::string value = base(o) + group_offset(cells, o, "cannl_cell") + " + " + group_offset(groups.steps, o, "cannl_step") + "]";
    // Guards only where a block or slice can reach past the tile (the device cannot know).
    std::string inside;
    if (extent % block != 0) inside = "cannl_cell < " + std::to_string(extent);
    if (steps % b.bk != 0) inside += (inside.empty() ? "" : " && ") + std::string("cannl_step < ") + std::to_string(steps);
    const std::string loaded = p.load(value, o.node->dtype);
    p.line(slice + "[cannl_kk * " + std::to_string(pitch) + " + cannl_x] = " +
           (inside.empty() ? loaded : inside + " ? " + loaded + " : " + zero) + ";");
    close_block(p);
  };
  std::string a_stage, b_stage;  // where the slice's stage starts in the shared arrays ("" unpipelined)
  if (pipelined) {
    print_pipelined_slice_start(p, *this, t, a_async, b_async, k0, b.bk, b.threads());
    a_stage = "cannl_sa + ";
    b_stage = "cannl_sb + ";
  } else {
    stage(as, t.a, groups.rows, row0, b.bm, a_pitch, rows);
    stage(bs, t.b, groups.cols, col0, b.bn, b_pitch, cols);
    p.line(barrier());
  }
  // The slice's steps in increasing order. Full slices take a loop of constant length the
  // compiler unrolls; the last one, when the steps leave a remainder, stops at the tile's steps
  // (its zero fill is never added: +0 would turn a -0 sum into +0).
  const auto slice = [&](std::int64_t length) {
    unrolled_for(p, "cannl_kk", length);
    p.line(type + " cannl_ar[" + std::to_string(b.tm) + "], cannl_br[" + std::to_string(b.tn) + "];");
    unrolled_for(p, "cannl_m", b.tm);
    p.line("cannl_ar[cannl_m] = " + as + "[" + a_stage + "cannl_kk * " + std::to_string(a_pitch) + " + " + ty + " + " +
           std::to_string(ty_count) + " * cannl_m];");
    close_block(p);
    unrolled_for(p, "cannl_n", b.tn);
    p.line("cannl_br[cannl_n] = " + bs + "[" + b_stage + "cannl_kk * " + std::to_string(b_pitch) + " + " + tx + " + " +
           std::to_string(tx_count) + " * cannl_n];");
    close_block(p);
    unrolled_for(p, "cannl_m", b.tm);
    unrolled_for(p, "cannl_n", b.tn);
    const std::string c = acc + "[cannl_m * " + std::to_string(b.tn) + " + cannl_n]";
    const std::string f = t.dtype == ir::DType::F64 ? "fma" : "fmaf";
    p.line(c + " = " +
           (t.fused ? f + "(cannl_ar[cannl_m], cannl_br[cannl_n], " + c + ")" : c + " + cannl_ar[cannl_m] * cannl_br[cannl_n]") +
           ";");
    close_block(p);
    close_block(p);
    close_block(p);
  };
  const std::int64_t last = steps % b.bk;
  if (last == 0) {
    slice(b.bk);
  } else if (steps < b.bk) {
    slice(last);
  } else {
    p.line("if (" + k0 + " + " + std::to_string(b.bk) + " <= " + std::to_string(steps) + ") {");
    p.indent();
    slice(b.bk);
    p.dedent();
    p.line("} else {");
    p.indent();
    slice(last);
    close_block(p);
  }
  if (!pipelined) p.line(barrier());
  close_block(p);
  unrolled_for(p, "cannl_m", b.tm);
  unrolled_for(p, "cannl_n", b.tn);
  p.line("if (cannl_in_rows[cannl_m] && cannl_in_cols[cannl_n]) " + cell + " = " +
         p.store({acc + "[cannl_m * " + std::to_string(b.tn) + " + cannl_n]", t.dtype}, t.d.node->dtype) + ";");
  close_block(p);
  close_block(p);
  close_block(p);
}

}  // namespace cannl::codegen
