// Tensor-core matmul tiles of the GPU dialects (ir::TileBlocking::mma): one workgroup per
// bm x bn block of output cells, each warp a tm x tn set of 16 x 8 MMA tiles with f32
// accumulators in registers.
//
//   __shared__ uint16_t cannl_ta_i4[..], cannl_tb_i4[..];    (at the kernel's top)
//   {
//     warp = tid / 32; lane = tid % 32; this warp's cells: rows wr .. wr + tm, columns wc .. wc + tn
//     acc[(mi * nt + ni) * 4 + e] = d[cell of element e of MMA tile (mi, ni)] (or +0)
//     pa, pb = this thread's share of a[rows, 0 .. bk) and b[0 .., cols], converted to the MMA
//       format (0 outside the tile)
//     for (k0 = 0; k0 < steps; k0 += bk) {
//       store pa, pb into the staged slices; barrier;
//       pa, pb = the shares of the next slices (their loads overlap the MMAs below);
//       for (kk = 0; kk < bk; kk += 16): A fragments by ldmatrix (.trans where the slice runs
//         along the cells), B fragments likewise, then one mma.sync per (mi, ni)
//       barrier;
//     }
//     d[cell] = acc[..] for the cells inside the tile
//   }
//
// The operands are exact in the format (TensorNode::rounded_to, checked by the final lowering
// round), so the conversion while staging loses nothing; each cell's sum, though, is the MMA's:
// the steps in its own order and grouping (a re-association the blocking licenses), and the
// staging's zero fill (0 x 0 products) added past the last step. Results are within a tolerance of
// the scalar tile, not its bits. A slice is laid out along the steps (cells x (bk + pad)) or,
// where the operand runs along the cells in memory, along the cells (bk x (cells + pad)), so
// that consecutive threads copy consecutive elements; ldmatrix reads rows of either with or
// without .trans. tf32 fragments are loaded lane by lane (ldmatrix moves 16-bit elements). The
// lane arithmetic is that of the PTX ISA's fragment tables (mma_fragments.h).
//
// A tf32 tile stages the f32 bits as they are, so it may be pipelined (TileBlocking::async_copy,
// async_staging.h): two stages per operand, the next slice's cp.async copies (zeros outside the
// tile, as the registers' path stages them) in flight while the warps multiply the current one,
// one barrier per slice (the scalar tile's loop, tile_printer.cpp). bf16 and f16 tiles convert
// while staging, which a copy engine cannot: they keep the registers' prefetch.
#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/tile_origin.h"
#include "codegen/gpu/async_staging.h"
#include "codegen/gpu/gpu_dialect.h"
#include "codegen/gpu/mma_fragments.h"
#include "codegen/gpu/tile_addressing.h"

namespace cannl::codegen {

namespace {

// One operand's staged slice in shared memory: element (x, kk) (x a row of A or a column of B
// within the block, kk a step within the slice) at x * pitch + kk, or kk * pitch + x when
// `along_cells`; in a pipelined tile, after `stage` (the current stage's first element).
struct Slice {
  std::string name;
  bool along_cells = false;
  std::int64_t pitch = 0;
  std::string stage = "";

  std::string at(const std::string& x, const std::string& kk) const {
    return stage + (along_cells ? "(" + kk + ") * " + std::to_string(pitch) + " + " + x
                                : "(" + x + ") * " + std::to_string(pitch) + " + " + kk);
  }
};

Slice slice_of(const std::string& name, const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
               const ir::TileGroups& groups, const ir::TileBlocking& b, std::int64_t block) {
  Slice s{name};
  s.along_cells = fastest_stride(cells, o) == 1 && fastest_stride(groups.steps, o) != 1;
  // The padding of TileBlocking::mma_slice_elements.
  s.pitch = s.along_cells ? block + 8 : b.bk + (b.mma == ir::NarrowFormat::TF32 ? 4 : 8);
  return s;
}

std::string mma_instruction(ir::NarrowFormat f) {
  switch (f) {
    case ir::NarrowFormat::BF16: return "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
    case ir::NarrowFormat::F16: return "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
    case ir::NarrowFormat::TF32: return "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
    case ir::NarrowFormat::None: break;
  }
  throw InternalError("codegen: a tensor-core tile without a format");
}

// The printing of one tile: its sizes, names and slices.
class MmaTile {
 public:
  MmaTile(const GpuDialect& d, BodyPrinter& p, const ir::TileMma& t)
      : d_(d), p_(p), t_(t), b_(t.blocking), groups_(ir::tile_groups(t)), ix_(p.index_type()) {
    const std::string name = p.fresh_loop_name();
    a_slice_ = slice_of("cannl_ta_" + name, t.a, groups_.rows, groups_, b_, b_.bm);
    b_slice_ = slice_of("cannl_tb_" + name, t.b, groups_.cols, groups_, b_, b_.bn);
    element_ = b_.mma == ir::NarrowFormat::TF32 ? "float" : "uint16_t";
    mt_ = b_.tm / 16;
    nt_ = b_.tn / 8;
  }

  void print() {
    const std::int64_t warps = b_.threads() / ir::TileBlocking::kWarpLanes;
    const std::int64_t stages = b_.async_copy ? 2 : 1;
    p_.declare_at_kernel_scope(d_.aligned_shared_array(element_, a_slice_.name, stages * b_.mma_slice_elements(b_.bm)));
    p_.declare_at_kernel_scope(d_.aligned_shared_array(element_, b_slice_.name, stages * b_.mma_slice_elements(b_.bn)));
    p_.line(comment(warps));
    p_.line("{");
    p_.indent();
    bind_indices();
    warp_args_ = d_.declare_warp_scratch(p_, warps);
    accumulators(/*store=*/false);
    pipeline();
    accumulators(/*store=*/true);
    close_block(p_);
  }

 private:
  // What the tile runs, for a reader of the kernel: the MMA instruction names the licence.
  std::string comment(std::int64_t warps) const {
    return "/* matmul tile " + std::to_string(t_.rows()) + " x " + std::to_string(t_.cols()) + " x " +
           std::to_string(t_.steps()) + (t_.folded() ? " (folded: implicit im2col)" : "") + " on tensor cores: " +
           mma_instruction(b_.mma) + " (f32 accumulators; each cell's sum re-associated): blocks of " +
           std::to_string(b_.bm) + " x " + std::to_string(b_.bn) + " cells in " + std::to_string(b_.bk) +
           "-step slices staged in shared memory as " + std::string(ir::narrow_format_name(b_.mma)) + ", " +
           std::to_string(warps) + " warps of " + std::to_string(b_.tm) + " x " + std::to_string(b_.tn) + " cells" +
           (b_.mma == ir::NarrowFormat::TF32 ? "" : ", fragments by ldmatrix") +
           (b_.async_copy ? ", two stages, the next slice's asynchronous copies (cp.async) in flight while the "
                            "warps multiply the current one"
                          : "") +
           (t_.zero_start ? "; " + p_.names().node(*t_.d.node) + " starts at zero" : "") + " */";
  }

  // The block's first row and column (blocks along the columns first), this thread's warp and
  // lane, and the warp's first row and column within the block.
  void bind_indices() {
    const std::int64_t col_blocks = (t_.cols() + b_.bn - 1) / b_.bn;
    const std::int64_t warps_n = b_.bn / b_.tn;
    line_const("cannl_tid", "(" + ix_ + ")" + d_.thread_index(0));
    line_const("cannl_blk", "(" + ix_ + ")" + d_.block_index(0));
    line_const("cannl_row0", "(cannl_blk / " + std::to_string(col_blocks) + ") * " + std::to_string(b_.bm));
    line_const("cannl_col0", "(cannl_blk % " + std::to_string(col_blocks) + ") * " + std::to_string(b_.bn));
    p_.line("const int cannl_warp = (int)(cannl_tid / 32), cannl_lane = (int)(cannl_tid % 32);");
    p_.line("const int cannl_wr = (cannl_warp / " + std::to_string(warps_n) + ") * " + std::to_string(b_.tm) +
            ", cannl_wc = (cannl_warp % " + std::to_string(warps_n) + ") * " + std::to_string(b_.tn) + ";");
  }

 private:
  const GpuDialect& d_;
  BodyPrinter& p_;
  const ir::TileMma& t_;
  const ir::TileBlocking& b_;
  ir::TileGroups groups_;
  std::string ix_, element_, warp_args_;
  Slice a_slice_, b_slice_;
  int mt_ = 0, nt_ = 0;

  void line_const(const std::string& name, const std::string& value) {
    p_.line("const " + ix_ + " " + name + " = " + value + ";");
  }

  std::string base(const ir::TileOperand& o) const {
    return p_.names().node(*o.node) + "[" + p_.offset(*o.node, at_tile_origin(o.index, t_)) + " + ";
  }

  // Loads (or, with `store`, stores) this lane's accumulator cells: element e of MMA tile
  // (mi, ni) holds row wr + 16 mi + groupID + 8 (e / 2), column wc + 8 ni + 2 threadID_in_group
  // + e % 2 of the block (mma_c_cell).
  void accumulators(bool store) {
    const std::string acc = "cannl_acc";
    const std::string count = std::to_string(mt_ * nt_ * 4);
    if (!store) p_.line("float " + acc + "[" + count + "];");
    unrolled_for(p_, "cannl_mi", mt_);
    unrolled_for(p_, "cannl_ni", nt_);
    unrolled_for(p_, "cannl_e", 4);
    line_const("cannl_r", "cannl_row0 + cannl_wr + 16 * cannl_mi + (cannl_lane >> 2) + 8 * (cannl_e >> 1)");
    line_const("cannl_c", "cannl_col0 + cannl_wc + 8 * cannl_ni + 2 * (cannl_lane & 3) + (cannl_e & 1)");
    p_.line("const int cannl_in = cannl_r < " + std::to_string(t_.rows()) + " && cannl_c < " +
            std::to_string(t_.cols()) + ";");
    const std::string cell = base(t_.d) + "(cannl_in ? " + group_offset(groups_.rows, t_.d, "cannl_r") + " + " +
                             group_offset(groups_.cols, t_.d, "cannl_c") + " : 0)]";
    const std::string slot = acc + "[(cannl_mi * " + std::to_string(nt_) + " + cannl_ni) * 4 + cannl_e]";
    const std::string zero = p_.zero(ir::DType::F32);
    if (store) {
      p_.line("if (cannl_in) " + cell + " = " + p_.store({slot, ir::DType::F32}, t_.d.node->dtype) + ";");
    } else {
      p_.line(slot + " = " + (t_.zero_start ? zero : "cannl_in ? " + p_.load(cell, t_.d.node->dtype) + " : " + zero) + ";");
    }
    close_block(p_);
    close_block(p_);
    close_block(p_);
  }

  // The f32 value `v` (exact in the format) as a staged element.
  std::string converted(const std::string& v) const {
    switch (b_.mma) {
      case ir::NarrowFormat::BF16: return "(uint16_t)((uint32_t)cannl_bits_of_f32(" + v + ") >> 16)";
      case ir::NarrowFormat::F16: return "cannl_mma_f16_bits(" + v + ")";
      default: return v;
    }
  }

  // One operand's staging: its slice, where its elements come from, and this thread's registers
  // holding its share of the next slice.
  struct Staged {
    const Slice* slice;
    const ir::TileOperand* operand;
    const std::vector<ir::TileAxis>* cells;
    std::string first, registers;
    std::int64_t block = 0, extent = 0;
  };

  std::int64_t slice_elements(const Staged& s) const { return b_.bk * s.block; }
  std::int64_t per_thread(const Staged& s) const { return (slice_elements(s) + b_.threads() - 1) / b_.threads(); }

  // Opens the loop over this thread's elements q of `s`'s slice (element e = tid + q * threads,
  // consecutive threads on consecutive elements along the operand's unit stride where it has
  // one) and binds their position in the slice, cannl_x (a row or column of the block) and
  // cannl_kk (a step of the slice).
  void open_share(const Staged& s) {
    unrolled_for(p_, "cannl_q", per_thread(s));
    line_const("cannl_e", "cannl_tid + " + std::to_string(b_.threads()) + " * cannl_q");
    if (!s.slice->along_cells) {
      line_const("cannl_kk", "cannl_e % " + std::to_string(b_.bk));
      line_const("cannl_x", "cannl_e / " + std::to_string(b_.bk));
    } else {
      line_const("cannl_x", "cannl_e % " + std::to_string(s.block));
      line_const("cannl_kk", "cannl_e / " + std::to_string(s.block));
    }
  }

  // This thread's share of the slice of `s` starting at step `k0`, converted, into its registers
  // (0 outside the tile): issued before the current slice's MMAs, so the loads overlap them.
  void prefetch(const Staged& s, const std::string& k0, bool past_the_steps) {
    const bool partial = slice_elements(s) % b_.threads() != 0;
    open_share(s);
    if (partial) {
      p_.line("if (cannl_e < " + std::to_string(slice_elements(s)) + ") {");
      p_.indent();
    }
    p_.line("const " + ix_ + " cannl_cell = " + s.first + " + cannl_x, cannl_step = " + k0 + " + cannl_kk;");
    const std::string value = base(*s.operand) + group_offset(*s.cells, *s.operand, "cannl_cell") + " + " +
                              group_offset(groups_.steps, *s.operand, "cannl_step") + "]";
    // Guards only where a block or slice can reach past the tile.
    std::string inside;
    if (s.extent % s.block != 0) inside = "cannl_cell < " + std::to_string(s.extent);
    if (t_.steps() % b_.bk != 0 || past_the_steps)
      inside += (inside.empty() ? "" : " && ") + std::string("cannl_step < ") + std::to_string(t_.steps());
    const std::string loaded = converted(p_.load(value, s.operand->node->dtype));
    p_.line(s.registers + "[cannl_q] = " + (inside.empty() ? loaded : inside + " ? " + loaded + " : 0") + ";");
    if (partial) close_block(p_);
    close_block(p_);
  }

  // The registers of `s` into its slice.
  void store(const Staged& s) {
    open_share(s);
    const bool partial = slice_elements(s) % b_.threads() != 0;
    p_.line(std::string(partial ? "if (cannl_e < " + std::to_string(slice_elements(s)) + ") " : "") + s.slice->name + "[" +
            s.slice->at("cannl_x", "cannl_kk") + "] = " + s.registers + "[cannl_q];");
    close_block(p_);
  }

  // The slices, one after the other: each thread stores the share it prefetched, and after the
  // barrier prefetches the next share before the warps multiply the stored slice.
  void pipeline() {
    if (b_.async_copy) {
      async_pipeline();
      return;
    }
    const Staged a{&a_slice_, &t_.a, &groups_.rows, "cannl_row0", "cannl_pa", b_.bm, t_.rows()};
    const Staged b{&b_slice_, &t_.b, &groups_.cols, "cannl_col0", "cannl_pb", b_.bn, t_.cols()};
    p_.line(element_ + " cannl_pa[" + std::to_string(per_thread(a)) + "], cannl_pb[" + std::to_string(per_thread(b)) + "];");
    prefetch(a, "0", false);
    prefetch(b, "0", false);
    p_.line("for (" + ix_ + " cannl_k0 = 0; cannl_k0 < " + std::to_string(t_.steps()) + "; cannl_k0 += " +
            std::to_string(b_.bk) + ") {");
    p_.indent();
    store(a);
    store(b);
    p_.line(d_.barrier());
    // The last slice's prefetch reaches past the steps: its guard loads nothing there.
    if (t_.steps() > b_.bk) {
      prefetch(a, "cannl_k0 + " + std::to_string(b_.bk), true);
      prefetch(b, "cannl_k0 + " + std::to_string(b_.bk), true);
    }
    multiply();
    p_.line(d_.barrier());
    close_block(p_);
  }

  // The pipelined slices (a tf32 tile: nothing converted): the slice's copies, issued one slice
  // ahead into the other stage, then one barrier per slice (see tile_printer.cpp).
  void async_pipeline() {
    internal_check(d_.spells_async_copy() && b_.copies_unconverted(),
                   "codegen: a pipelined tensor-core tile that converts its operands or whose dialect has no "
                   "asynchronous copies");
    const auto staging = [&](const Slice& slice, const ir::TileOperand& o, const std::vector<ir::TileAxis>& cells,
                             const std::string& first, std::int64_t block, std::int64_t extent) {
      AsyncStaging s{slice.name, &o, &cells, first, block, extent, slice.along_cells, slice.pitch,
                     b_.mma_slice_elements(block)};
      s.elements = async_copy_cells(t_, o, cells, slice.along_cells, block, b_.bk, slice.pitch);
      s.threads_along_cells = slice.along_cells;
      return s;
    };
    AsyncStaging a = staging(a_slice_, t_.a, groups_.rows, "cannl_row0", b_.bm, t_.rows());
    AsyncStaging b = staging(b_slice_, t_.b, groups_.cols, "cannl_col0", b_.bn, t_.cols());
    // One slice's copies of both operands are in flight at a time.
    a.queue = b.queue = d_.async_copy_queue(p_, async_copies_per_thread(a, b_.threads(), b_.bk) +
                                                    async_copies_per_thread(b, b_.threads(), b_.bk));
    print_async_copies(p_, t_, a, "0", "0", b_.threads(), b_.bk);
    print_async_copies(p_, t_, b, "0", "0", b_.threads(), b_.bk);
    p_.line("cannl_cp_async_commit();");
    p_.line("for (" + ix_ + " cannl_k0 = 0; cannl_k0 < " + std::to_string(t_.steps()) + "; cannl_k0 += " +
            std::to_string(b_.bk) + ") {");
    p_.indent();
    p_.line("const int cannl_stage = (int)((cannl_k0 / " + std::to_string(b_.bk) + ") % 2);");
    line_const("cannl_sa", "cannl_stage * " + std::to_string(a.stage_elements));
    line_const("cannl_sb", "cannl_stage * " + std::to_string(b.stage_elements));
    p_.line("cannl_cp_async_wait_all(" + a.queue + ");");
    p_.line(d_.barrier());
    if (t_.steps() > b_.bk) {
      p_.line("if (cannl_k0 + " + std::to_string(b_.bk) + " < " + std::to_string(t_.steps()) + ") {");
      p_.indent();
      const std::string next = "cannl_k0 + " + std::to_string(b_.bk);
      print_async_copies(p_, t_, a, next, std::to_string(a.stage_elements) + " - cannl_sa", b_.threads(), b_.bk);
      print_async_copies(p_, t_, b, next, std::to_string(b.stage_elements) + " - cannl_sb", b_.threads(), b_.bk);
      p_.line("cannl_cp_async_commit();");
      close_block(p_);
    }
    a_slice_.stage = "cannl_sa + ";
    b_slice_.stage = "cannl_sb + ";
    multiply();
    close_block(p_);
  }

  // A's fragment registers of MMA tile mi at step kk. ldmatrix .x4 matrix j = lane / 8 is rows
  // 8 (j % 2) .. + 8 and steps 8 (j / 2) .. + 8 of the 16 x 16 tile: registers a0a1, a2a3, a4a5,
  // a6a7 of mma_a_cell; this lane gives the address of row lane % 8 of matrix j (as stored).
  void a_fragments(const std::string& kk) {
    unrolled_for(p_, "cannl_mi", mt_);
    const std::string m0 = "cannl_wr + 16 * cannl_mi + 8 * ((cannl_lane >> 3) & 1)";
    if (b_.mma == ir::NarrowFormat::TF32) {
      // mma_a_cell for tf32: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
      for (int e = 0; e < 4; ++e) {
        const std::string row = "cannl_wr + 16 * cannl_mi + (cannl_lane >> 2) + " + std::to_string(8 * (e % 2));
        const std::string step = kk + " + (cannl_lane & 3) + " + std::to_string(4 * (e / 2));
        p_.line("cannl_fa[cannl_mi * 4 + " + std::to_string(e) + "] = (uint32_t)cannl_bits_of_f32(" + a_slice_.name + "[" +
                a_slice_.at(row, step) + "]);");
      }
    } else {
      const std::string offset = a_slice_.along_cells
                                     ? a_slice_.at("cannl_wr + 16 * cannl_mi + 8 * ((cannl_lane >> 3) & 1)",
                                             kk + " + 8 * (cannl_lane >> 4) + (cannl_lane & 7)")
                                     : a_slice_.at(m0 + " + (cannl_lane & 7)", kk + " + 8 * (cannl_lane >> 4)");
      p_.line(std::string(a_slice_.along_cells ? "cannl_ldsm_x4_trans" : "cannl_ldsm_x4") + "(cannl_fa + cannl_mi * 4, " +
              a_slice_.name + ", " + offset + warp_args_ + ");");
    }
    close_block(p_);
  }

  // B's fragment registers of MMA tiles 2 np and 2 np + 1 at step kk: ldmatrix .x4 matrix j is
  // columns 8 (j / 2) .. + 8 and steps 8 (j % 2) .. + 8, so registers b0b1 and b2b3 of tile 2 np
  // come first (mma_b_cell: column groupID, steps 2 threadID_in_group + (i & 1), + 8 for i >= 2).
  void b_fragments(const std::string& kk) {
    const Slice& s = b_slice_;
    if (b_.mma == ir::NarrowFormat::TF32) {
      // mma_b_cell for tf32: b0 (t, g), b1 (t + 4, g).
      unrolled_for(p_, "cannl_ni", nt_);
      for (int e = 0; e < 2; ++e) {
        const std::string col = "cannl_wc + 8 * cannl_ni + (cannl_lane >> 2)";
        const std::string step = kk + " + (cannl_lane & 3) + " + std::to_string(4 * e);
        p_.line("cannl_fb[cannl_ni * 2 + " + std::to_string(e) + "] = (uint32_t)cannl_bits_of_f32(" + s.name + "[" +
                s.at(col, step) + "]);");
      }
      close_block(p_);
      return;
    }
    unrolled_for(p_, "cannl_np", nt_ / 2);
    const std::string n0 = "cannl_wc + 16 * cannl_np + 8 * (cannl_lane >> 4)";
    const std::string offset = s.along_cells ? s.at(n0, kk + " + 8 * ((cannl_lane >> 3) & 1) + (cannl_lane & 7)")
                                             : s.at(n0 + " + (cannl_lane & 7)", kk + " + 8 * ((cannl_lane >> 3) & 1)");
    p_.line(std::string(s.along_cells ? "cannl_ldsm_x4_trans" : "cannl_ldsm_x4") + "(cannl_fb + cannl_np * 4, " +
            s.name + ", " + offset + warp_args_ + ");");
    close_block(p_);
  }

  void multiply() {
    const int steps = b_.mma_steps();
    p_.line("#pragma unroll");
    p_.line("for (int cannl_kk = 0; cannl_kk < " + std::to_string(b_.bk) + "; cannl_kk += " + std::to_string(steps) + ") {");
    p_.indent();
    p_.line("uint32_t cannl_fa[" + std::to_string(mt_ * 4) + "], cannl_fb[" + std::to_string(nt_ * 2) + "];");
    a_fragments("cannl_kk");
    b_fragments("cannl_kk");
    unrolled_for(p_, "cannl_mi", mt_);
    unrolled_for(p_, "cannl_ni", nt_);
    p_.line("cannl_mma_" + std::string(ir::narrow_format_name(b_.mma)) + "(cannl_acc + (cannl_mi * " +
            std::to_string(nt_) + " + cannl_ni) * 4, cannl_fa + cannl_mi * 4, cannl_fb + cannl_ni * 2" + warp_args_ + ");");
    close_block(p_);
    close_block(p_);
    close_block(p_);
  }
};

}  // namespace

std::string GpuDialect::declare_warp_scratch(BodyPrinter&, std::int64_t) const { return ""; }

void GpuDialect::print_mma_tile(BodyPrinter& p, const ir::TileMma& t) const {
  const ir::KernelGeometry* g = p.geometry();
  const ir::TileBlocking& b = t.blocking;
  internal_check(spells_warp_mma(), "codegen: a tensor-core tile on a dialect without warp MMA helpers (the "
                                    "target's gpu_mma_formats should be empty)");
  internal_check(g != nullptr && b.valid(), "codegen: a tensor-core tile without its blocking");
  internal_check(g->block[0] == b.threads() && g->block[1] == 1 && g->block[2] == 1 && !p.divergent(),
                 "codegen: a tensor-core tile shares its kernel's threads (fission launches it alone)");
  MmaTile(*this, p, t).print();
}

}  // namespace cannl::codegen
