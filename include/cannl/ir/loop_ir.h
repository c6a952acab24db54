#pragma once
// The loop IR (low level): loops over scalar assignments to tensor nodes.
//
// Values are immutable and shared (`std::shared_ptr<const ...>`); passes build new trees.
// Indices are *buffer* indices: lowering already added padding offsets.
//
// Typing and conversion rules (shared by the interpreter and every code generator, so their
// results agree bit for bit):
//  * Every scalar has a dtype (`scalar_dtype`). An Apply computes in its dtype, which lowering sets
//    to `compute_dtype(lhs dtype)`: narrow floats (f16, bf16, fp8) compute in f32 and are narrowed
//    once, when stored by `Set`.
//  * Arguments are converted to the Apply's dtype first, except: `Where`'s condition is tested
//    (!= 0) in its own dtype; `Uniform1`'s argument must be U4x32; threefry args convert to U4x32.
//  * Conversions: float->float rounds to nearest even (narrow targets through the support codecs,
//    from f64 directly, never via f32); int->float as a C cast (to narrow floats via f64);
//    float->int truncates toward zero and saturates, NaN -> 0; int->int wraps as a C cast;
//    x->U4x32 = {low 32, high 32, 0, 0} of the value as int64 (u64 keeps its bits);
//    U4x32->x = the low 64 bits as u64, then converted.
//  * Integer ops wrap on overflow; integer division or modulo by zero gives 0.
//
//   For i0 in [0, 4): c[i0] = (a[i0] + b[i0])

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cannl/ir/dtype.h"
#include "cannl/ir/indexing.h"
#include "cannl/ir/ops.h"
#include "cannl/ir/tensor_node.h"

namespace cannl::ir {

struct Scalar;
struct Stmt;
using ScalarRef = std::shared_ptr<const Scalar>;
using StmtRef = std::shared_ptr<const Stmt>;

// ---- scalars ----
struct Constant { double value = 0; DType dtype = DType::F32; };
struct ConstantBits { std::int64_t bits = 0; DType dtype = DType::I64; };
struct Get { NodeRef node; std::vector<AxisIndex> index; };
/// Value of an inlined computation: run `body` (which writes local `scope_id` with SetLocal),
/// then read the local.
struct LocalScope { int scope_id = 0; DType dtype = DType::F32; StmtRef body; };
struct GetLocal { int scope_id = 0; DType dtype = DType::F32; };
/// The value of an index expression (i64).
struct EmbedIndex { AxisIndex index; };
struct Apply { Op op = Op::Identity; DType dtype = DType::F32; std::vector<ScalarRef> args; };
/// Gather at a runtime row (made by the one-hot rewrite): `node[index]` with axis `dyn_axis`
/// replaced by the row `r` = the value of `dyn_value` (any non-u4x32 dtype) converted to f64.
/// When `r` is not an integer in [0, dims[dyn_axis]) (negative, too large, fractional, NaN) the
/// result is 0 of the node's dtype. `index[dyn_axis]` is a placeholder and must be fixed 0.
///   table[?0 := ids[i0], i1]  is  GetDynamic{table, {fixed(0), i1}, 0, get(ids, {i0})}
struct GetDynamic { NodeRef node; std::vector<AxisIndex> index; int dyn_axis = 0; ScalarRef dyn_value; };

struct Scalar {
  std::variant<Constant, ConstantBits, Get, LocalScope, GetLocal, EmbedIndex, Apply, GetDynamic>
      node;
};

DType scalar_dtype(const Scalar& s);

ScalarRef constant(double value, DType dtype);
ScalarRef constant_bits(std::int64_t bits, DType dtype);
ScalarRef get(NodeRef node, std::vector<AxisIndex> index);
ScalarRef embed_index(AxisIndex index);
ScalarRef apply(Op op, DType dtype, std::vector<ScalarRef> args);
ScalarRef local_scope(int scope_id, DType dtype, StmtRef body);
ScalarRef get_local(int scope_id, DType dtype);
ScalarRef get_dynamic(NodeRef node, std::vector<AxisIndex> index, int dyn_axis, ScalarRef dyn_value);

// ---- statements ----
struct Seq { std::vector<StmtRef> stmts; };
struct Comment { std::string text; };
/// How a loop maps onto hardware (the schedule layer sets it; lowering makes every loop Serial).
/// Serial: a plain loop. Grid / Workgroup: the index is a block / thread hardware index on GPUs;
/// on CPUs Grid runs as parallel chunks and Workgroup as a serial loop. WorkgroupReduce: a
/// workgroup axis of a cooperative reduction. Unrolled: the body repeated with constant indices.
/// Vectorized: explicit SIMD. Any non-Serial type asserts iteration independence (or, for a
/// recognized reduction, licenses re-association).
enum class AxisType : std::uint8_t { Serial, Grid, Workgroup, WorkgroupReduce, Unrolled, Vectorized };
std::string_view axis_type_name(AxisType type);

/// for (index = begin; index < end; ++index) body
struct For {
  Symbol index;
  std::int64_t begin = 0;
  std::int64_t end = 0;
  StmtRef body;
  AxisType axis = AxisType::Serial;
  /// A Grid loop on a CPU target (written by the schedule's final lowering round, read by the
  /// printer): the range runs as `chunks` contiguous chunks, each on one thread in increasing
  /// order (0: four per thread of the team, counted at run time), on a team of `team` threads
  /// (0: the parallel runtime's default team).
  std::int64_t chunks = 0;
  int team = 0;
};
/// Every cell of the node's buffer (padding included) := 0.
struct ZeroOut { NodeRef node; };
/// node[index] := value (converted to the node's dtype). `comment` names the source assignment.
struct Set { NodeRef node; std::vector<AxisIndex> index; ScalarRef value; std::string comment; };
struct SetLocal { int scope_id = 0; ScalarRef value; };
struct DeclareLocal { int scope_id = 0; DType dtype = DType::F32; bool needs_init = false; };
/// Runs body when condition != 0. A conditional write is never a definite write.
struct If { ScalarRef condition; StmtRef body; };
/// Guarded scatter-accumulate at a runtime row (made by the one-hot rewrite of an embedding
/// backward): with row `r` chosen as in GetDynamic, when `r` is valid
///   node[index with dyn_axis := r] := accum(node[...], value)   (computed in compute_dtype of the
/// node's dtype, then stored), and nothing happens otherwise. Executed in program (serial) order,
/// so repeated rows accumulate deterministically. `index[dyn_axis]` must be fixed 0.
struct SetDynamic {
  NodeRef node;
  std::vector<AxisIndex> index;
  int dyn_axis = 0;
  ScalarRef dyn_value;
  ScalarRef value;
  Op accum = Op::Add;
  std::string comment;
};

/// Waits until every thread of a workgroup reaches it (GPU shared-memory staging). CPUs run one
/// thread of control per Grid chunk, so the interpreter and the C backend treat it as a no-op.
struct Barrier {};

/// One loop of a TileMma tile: the symbol of the fallback's loop and its range [begin, end).
struct TileAxis {
  Symbol symbol;
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t extent() const { return end - begin; }
};
/// One operand access of a TileMma, exactly as the fallback writes it: the index still mentions
/// the tile symbols i/j/k (and any enclosing loop or static symbols). A renderer gets the tile's
/// base offset by setting the tile symbols to their `begin` and the strides from their coefficients.
struct TileOperand { NodeRef node; std::vector<AxisIndex> index; };

/// How a GPU renders a tile (TileMma::blocking; the target's default is Target::gpu_tile): the
/// output in blocks of bm x bn cells, one workgroup each, whose threads stage bk-deep slices of
/// the operands in workgroup-shared memory and each accumulate a tm x tn register tile
/// ((bm / tm) * (bn / tn) threads). bm == 0: not blocked.
///   TileBlocking{64, 64, 16, 4, 4}   // 256 threads, (16 x 65 + 16 x 65) staged f32 cells
///
/// With `mma` (a tensor-core tile, Target::gpu_mma_tile): each warp of 32 lanes accumulates a
/// tm x tn tile of 16 x 8 MMA results ((bm / tm) * (bn / tn) warps), the operands staged in the
/// `mma` format (16-bit, or 32-bit for tf32) and multiplied by warp-level MMA instructions
/// (m16n8k16 for bf16 and f16, m16n8k8 for tf32) with f32 accumulators. A licence to
/// re-associate each cell's sum (the final lowering round grants it only where the operands are
/// exact in the format and the target allows it).
///   TileBlocking{128, 128, 32, 64, 32, NarrowFormat::BF16}   // 8 warps, 4 x 4 MMAs each per step
///
/// With `async_copy` (Target::gpu_async_copy; the final lowering round sets it): the staging is a
/// two-stage pipeline, two slices per operand in shared memory, the next slice's asynchronous
/// copies (CUDA cp.async) in flight while the block computes the current one. Only where nothing
/// is converted on the way into shared memory (the scalar tile, tf32 tensor-core tiles).
///   TileBlocking{64, 64, 16, 4, 4, NarrowFormat::None, true}   // 2 x (16 x 68 + 16 x 68) cells
struct TileBlocking {
  int bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  NarrowFormat mma = NarrowFormat::None;
  bool async_copy = false;

  /// Lanes of the warp an MMA instruction runs on.
  static constexpr int kWarpLanes = 32;

  bool blocked() const { return bm > 0; }
  bool tensor_cores() const { return mma != NarrowFormat::None; }
  /// Positive sizes and whole register tiles per block (bm % tm == bn % tn == 0); with `mma`
  /// also whole MMA tiles per warp (tm % 16, tn % 16 and bk % mma_steps() == 0); `async_copy`
  /// only where copies_unconverted().
  bool valid() const;
  std::int64_t threads() const {
    if (!blocked()) return 1;
    return std::int64_t{bm / tm} * (bn / tn) * (tensor_cores() ? kWarpLanes : 1);
  }
  /// Steps of one MMA instruction: 16 (bf16, f16), 8 (tf32); 0 without `mma`.
  int mma_steps() const;
  /// Bytes of one staged operand element of a tensor-core tile: 2, or 4 for tf32.
  int mma_element_bytes() const { return mma == NarrowFormat::TF32 ? 4 : 2; }
  /// Elements of one staged operand slice row: the block's rows (columns) plus one of padding, so
  /// threads storing along the steps hit distinct shared-memory banks.
  std::int64_t padded_rows() const { return bm + 1; }
  std::int64_t padded_cols() const { return bn + 1; }
  /// A pipelined scalar tile's slice row for `cells` (bm or bn) cells: four elements of padding
  /// keep the rows 16 bytes aligned for 16-byte copies (the most a slice row takes).
  static std::int64_t async_pitch(std::int64_t cells) { return cells + 4; }
  /// Whether the staging may be a pipeline of asynchronous copies: nothing converted while staged
  /// (no tensor-core format, or tf32, which is staged as the f32 it is).
  bool copies_unconverted() const { return mma == NarrowFormat::None || mma == NarrowFormat::TF32; }
  /// Elements a tensor-core tile stages of an operand with `cells` rows (bm) or columns (bn):
  /// laid out along the steps (cells x (bk + pad)) or along the cells (bk x (cells + pad)),
  /// whichever the operand's layout makes coalesced; room for the larger one. The padding keeps
  /// ldmatrix's eight 16-byte rows (and the tf32 lanes' loads) on distinct banks.
  std::int64_t mma_slice_elements(std::int64_t cells) const;
  /// Bytes of workgroup-shared memory the staged slices of A and B take, for elements of
  /// `element_bytes` (a tensor-core tile's own element size instead); both stages with `async_copy`.
  std::int64_t shared_bytes(std::int64_t element_bytes) const;
  bool operator==(const TileBlocking&) const = default;
};

/// Register-tiled matmul micro-kernel over a tile (made by the Tensorize schedule transform):
///   for (i, j, k) in the tile:  d[.., i, j] = accum(d[.., i, j], a[.., i, k] * b[.., k, j])
///   (or, when `fused`, d[.., i, j] = fma(a[.., i, k], b[.., k, j], d[.., i, j])), computed in
///   `dtype` and stored in d's dtype after every update.
/// The meaning is exactly `fallback`, the original perfect nest: the interpreter, every pass that
/// does not know TileMma and any renderer that declines run the fallback. A renderer emitting its
/// own micro-kernel stays bitwise equal only by visiting k in increasing order per output cell and
/// by fusing the multiply-add exactly when `fused` is set.
///
/// A tile may fold further loops of the fallback's perfect nest, enclosing i, j and k: more rows
/// (`outer_i`: in d and a only), more columns (`outer_j`: in d and b only) and more reduction
/// steps (`outer_k`: in a and b only), each list outermost first. The tile is then the
/// (rows x columns x steps) product, the steps of each cell taken in nest order (`outer_k`, then
/// k): an implicit im2col for convolutions. Tensorize folds loops only when d's index is
/// injective over all rows and columns, so every update of a cell is one of its own steps.
struct TileMma {
  TileOperand d, a, b;
  TileAxis i, j, k;
  Op accum = Op::Add;
  bool fused = false;
  DType dtype = DType::F32;
  StmtRef fallback;
  std::vector<TileAxis> outer_i = {}, outer_j = {}, outer_k = {};
  /// The whole of d is zero before the tile runs (the final lowering round folds a ZeroOut of d
  /// that the tile then overwrites cell by cell into this flag): the tile means "zero d, then the
  /// fallback", and a renderer may start its accumulators at +0 instead of loading d.
  bool zero_start = false;
  /// Threads the tile's renderer may share its cells out to (each cell still on one thread, in
  /// increasing k, so the bits do not depend on it): 1 serial, 0 the target's default team.
  int team = 1;
  /// On a GPU target (written by the final lowering round): the tile is its own launch, one
  /// workgroup per bm x bn block of cells (Grid slot 0, blocks along the columns first) and
  /// (bm / tm) * (bn / tn) threads (Workgroup slot 0); Grid loops around it take the slots above.
  /// Unblocked (the default): the tile runs as the target's micro-kernel or its fallback.
  TileBlocking blocking = {};

  /// Every axis, in the order printers name them: i, j, k, then outer_i, outer_j, outer_k.
  std::vector<const TileAxis*> axes() const;
  /// The tile's rows, columns and steps: i, j, k times their folded loops' extents.
  std::int64_t rows() const;
  std::int64_t cols() const;
  std::int64_t steps() const;
  bool folded() const { return !outer_i.empty() || !outer_j.empty() || !outer_k.empty(); }
  /// Workgroups of a blocked tile: ceil(rows / bm) * ceil(cols / bn); 1 when unblocked.
  std::int64_t blocks() const;
};

struct Stmt {
  std::variant<Seq, Comment, For, ZeroOut, Set, SetLocal, DeclareLocal, If, SetDynamic, Barrier,
               TileMma>
      node;
};

StmtRef seq(std::vector<StmtRef> stmts);
StmtRef comment(std::string text);
StmtRef for_loop(Symbol index, std::int64_t begin, std::int64_t end, StmtRef body,
                 AxisType axis = AxisType::Serial);
StmtRef zero_out(NodeRef node);
StmtRef set(NodeRef node, std::vector<AxisIndex> index, ScalarRef value, std::string comment = {});
StmtRef set_local(int scope_id, ScalarRef value);
StmtRef declare_local(int scope_id, DType dtype, bool needs_init);
StmtRef if_then(ScalarRef condition, StmtRef body);
StmtRef set_dynamic(NodeRef node, std::vector<AxisIndex> index, int dyn_axis, ScalarRef dyn_value,
                    ScalarRef value, Op accum = Op::Add, std::string comment = {});
StmtRef barrier();
/// A TileMma statement; checks that the fallback is present (see TileMma for the meaning).
StmtRef tile_mma(TileMma tile);
/// The equivalent static access of a dynamic one: `index` with `index[dyn_axis]` := `row`.
std::vector<AxisIndex> with_dynamic_row(std::vector<AxisIndex> index, int dyn_axis, std::int64_t row);
/// The row a dynamic access selects for a value already converted to f64, or -1 when the value
/// is not an integer in [0, extent): dynamic_row(2.0, 4) == 2, dynamic_row(2.5, 4) == -1.
std::int64_t dynamic_row(double value, std::int64_t extent);

/// A fresh process-unique id for LocalScope/GetLocal.
int fresh_scope_id();

/// An operand packed once outside the routine (a hoisted Stage): `fill` writes every cell of
/// `packed` from `source`, and the routine reads `packed` instead of copying a tile per call. The
/// runtime runs the fills before the routine's first run and again only after `source` changed
/// (a host upload, or a routine writing it); the routine itself never writes `source`.
struct PackedOperand {
  NodeRef source;
  NodeRef packed;
  StmtRef fill;
};

/// A lowered routine: what backends compile.
struct LoweredRoutine {
  std::string name;                  // a C identifier
  StmtRef body;
  std::vector<StaticSymbol> statics; // runtime-bound symbols, in parameter order
  std::vector<PackedOperand> packed; // packings hoisted out of `body` (run by the runtime)
};

/// Readable text of the loop IR (the `.ll` dumps), with symbols renamed i0, i1, ... per routine.
std::string print_loop_ir(const LoweredRoutine& routine);
std::string print_stmt(const StmtRef& stmt);
std::string print_scalar(const ScalarRef& scalar);

/// Nodes with storage the routine touches (reads or writes), in first-occurrence order.
std::vector<NodeRef> nodes_of(const StmtRef& stmt);
/// The statements of `s` in order with nested Seqs flattened (`s` itself when it is no Seq).
std::vector<StmtRef> flatten_seq(const StmtRef& s);

/// Whether some axis of `index` mentions loop `s`.
bool mentions(const std::vector<AxisIndex>& index, Symbol s);
/// Element stride of loop `s` in the row-major flattening of `index` over `node`'s dims:
///   flat_stride(c [4 x 8], [i, 2*j + k], j) == 2
std::int64_t flat_stride(const TensorNode& node, const std::vector<AxisIndex>& index, Symbol s);
/// Whether distinct values of `loops` address distinct elements of `node` at `index`: a
/// sufficient test (mixed radix: sorted by |stride|, each stride exceeds the reach of the
/// smaller ones). Used to prove a tile's cells distinct, by the schedule and the renderer.
bool distinct_cells(const TensorNode& node, const std::vector<AxisIndex>& index, const std::vector<TileAxis>& loops);
/// Nodes a scalar reads (including inside local scopes), in first-occurrence order:
///   nodes_of(apply(Op::Add, F32, {get(a, i), get(b, i)})) == {a, b}
std::vector<NodeRef> nodes_of(const ScalarRef& scalar);

}  // namespace cannl::ir
