#pragma once
// The target record: what one backend's hardware and runtime can run, filled once by the backend
// and read by everything that decides or prints code for it: the default schedule (which loops
// pay to parallelize, vectorize or tile), the schedule's final lowering round (which writes
// every decision into the loop IR) and the printer (which only spells what the IR says). The
// autotuner searches over its fields.
//
//   ir::Target t = backend->target();
//   if (t.vector_bytes > 0) ...            // explicit SIMD of that width
//   t.gemm.mr, t.gemm.nr(t.vector_lanes())  // the matmul micro-kernel's register tile

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/ops.h"

namespace cannl::ir {

/// The register-tiled f32 matmul kernel of a CPU target and its cache blocks: an mr x
/// (nv * lanes) tile of C lives in mr * nv vector registers across the k loop; A panels
/// (kc x mr) stay in L1, B blocks (kc x nc) in L2, A blocks (mc x kc) in L3.
struct GemmShape {
  int mr = 0;
  int nv = 0;
  int kc = 0;
  int nc = 0;
  int mc = 0;
  /// Columns of one register tile: nv vectors of `lanes` f32 lanes.
  int nr(int lanes) const { return nv * lanes; }
  bool operator==(const GemmShape&) const = default;
};

/// The launch limits of a GPU (the backend's `hardware_limits`): what one kernel's geometry may
/// ask for. The GPU schedule clamps its block size to them; `schedule::check_hardware_limits`
/// rejects a kernel over them before the driver sees it.
///   CUDA sm_90: {1024, {1024, 1024, 64}, {2^31-1, 65535, 65535}, 49152, 32}
struct GpuLimits {
  std::int64_t max_threads_per_block = 0;  // 0: not a GPU
  std::array<std::int64_t, 3> max_block_dims = {0, 0, 0};
  std::array<std::int64_t, 3> max_grid_dims = {0, 0, 0};
  /// Workgroup-shared (CUDA shared, OpenCL local) memory of one block, in bytes.
  std::int64_t max_shared_bytes = 0;
  /// Threads that run in lock step (CUDA warp: 32); 1 where the device has no such unit.
  int warp_size = 1;
  /// Blocks the device runs at once, at least one each (CUDA multiprocessors, OpenCL compute
  /// units); 0 when unknown.
  std::int64_t compute_units = 0;
  bool operator==(const GpuLimits&) const = default;
};

struct Target {
  /// The backend's name ("cc", "interpreter"): for messages and cache keys only, never for
  /// decisions (those read the fields below).
  std::string backend;

  // ---- explicit SIMD ----
  /// Bytes of one f32 vector (16, 32, 64); 0 = no explicit SIMD: Vectorized loops and matmul
  /// tiles are lowered to their serial forms.
  int vector_bytes = 0;
  /// Ops whose vector form rounds exactly like the scalar one (a Vectorized loop using another
  /// op is lowered to a serial loop).
  std::vector<Op> vector_ops;

  // ---- matmul tiles ----
  GemmShape gemm;
  /// Below this many multiply-adds (rows x columns x steps) a tile does not repay its packing:
  /// the schedule does not make one, and the final round lowers one it meets to its nest.
  std::int64_t min_tile_work = 4096;

  // ---- threads ----
  /// A runtime runs Grid loops in parallel (OpenMP on the CPU); false: Grid loops run serially
  /// and tiles on one thread.
  bool parallel_runtime = false;
  /// Team size; 0 = the runtime's default (OMP_NUM_THREADS or one per core).
  int threads = 0;
  /// Chunks per Grid loop; 0 = four per team thread, counted at run time.
  std::int64_t grid_chunks = 0;

  // ---- GPUs ----
  /// Threads of a workgroup run Workgroup loops in parallel (GPU blocks); false: Workgroup and
  /// WorkgroupReduce loops run serially inside their Grid chunk.
  bool workgroups = false;
  /// The device's launch limits (all zero on CPUs).
  GpuLimits gpu;
  /// How matmul tiles run on the GPU (unblocked: as their nests): the largest blocking; the final
  /// lowering round shrinks it for a smaller tile (config `gpu_tile_bm`, ..., `gpu_tile_tn`).
  TileBlocking gpu_tile;
  /// The operand formats the device's tensor cores multiply with f32 accumulation (CUDA sm_80
  /// and later: bf16, f16, tf32), empty where it has none or they are not allowed (config
  /// `gpu_tensor_cores`): a matmul tile whose operands are both exact in one of them runs as a
  /// tensor-core tile (TileBlocking::mma), blocked by `gpu_mma_tile` (its sizes only; config
  /// `gpu_mma_bm`, ..., `gpu_mma_wn`), fitted by fitted_mma_blocking.
  std::vector<NarrowFormat> gpu_mma_formats;
  TileBlocking gpu_mma_tile;
  /// The device copies global to shared memory asynchronously (CUDA sm_80 and later: cp.async)
  /// and config `gpu_async_copy` allows it: blocked tiles that stage unconverted operands and
  /// whose two stages fit the device pipeline their slices (TileBlocking::async_copy).
  bool gpu_async_copy = false;
  /// Bytes a GPU thread moves in one load or store of a Vectorized loop (16: float4, int4,
  /// uint4; 8: float2); 0: Vectorized loops run as serial loops on the GPU (gpu_vector_loop).
  int gpu_vector_bytes = 0;

  // ---- index arithmetic ----
  /// The integer type of generated loop counters, buffer offsets and dynamic rows: I32 (the
  /// default, and GPUs': narrower registers and address arithmetic) or I64 (cpu_target's; config
  /// `large_models`, `index_prec`). Under I32 every node the routine touches must have at most 2^31 - 1 elements
  /// (padding included) and every offset's partial sums must fit: the printer checks and throws
  /// IndexRangeError otherwise. Static symbols stay int64 parameters either way.
  DType index_dtype = DType::I32;

  int vector_lanes() const { return vector_bytes / 4; }
  bool renders_vector_op(Op op) const;
  bool operator==(const Target&) const = default;
};

// ---- what a target runs as written (the final lowering round lowers the rest; printers
// assert these) ----

/// Whether `index` moves contiguously with loop `s`: only its last axis mentions `s`, once, with
/// coefficient 1 (a vector load or store along `s`).
bool contiguous_in(const std::vector<AxisIndex>& index, Symbol s);

/// Whether `s` (constants, reads and ops only) reads nothing that moves with `loop`: a vector
/// loop evaluates it once as a scalar and splats it, e.g. the f32 rounding of an f64 cell.
bool loop_invariant(const ScalarRef& s, Symbol loop);

/// A tile's rows, columns and steps: each group's folded loops outermost first, then i, j, k.
struct TileGroups {
  std::vector<TileAxis> rows, cols, steps;
};
TileGroups tile_groups(const TileMma& t);

/// The two shapes of Vectorized loop with an exact vector form:
///  * elementwise: every statement is `d[.., s] = f(...)` with `s` the loop index, contiguous
///    (coefficient 1 in the last axis only); operands are contiguous vectors or loop-invariant
///    splats; f uses only ops in the target's `vector_ops`; no node is written at two cells or
///    read at a cell other than the one written, so the result is bitwise the serial loop's;
///  * accumulation: one statement `d[..] = d[..] + f(...)` with `d` not indexed by `s` and f not
///    reading d: independent vector accumulator chains and a fixed-order horizontal sum (the
///    Vectorized annotation licenses that re-association).
enum class VectorForm { None, Elementwise, Accumulation };

/// The shape `f`'s body has, or None when it has neither exact vector form on `target` (no
/// SIMD, fewer iterations than lanes, a non-f32 value, an op without a vector form, a
/// non-contiguous access, a loop-carried read).
VectorForm vector_form(const For& f, const Target& target);

/// The dtypes a GPU vector loop moves as whole vectors (float4, int4, uint4): f32, i32, u32.
bool gpu_vector_dtype(DType t);

/// A Vectorized loop a GPU thread runs as whole-vector loads and stores with the arithmetic
/// lane by lane (bitwise the serial loop): Target::gpu_vector_bytes set, the loop over [0,
/// lanes) for lanes = gpu_vector_bytes / 4, a body of Sets storing 4-byte values (f32, i32,
/// u32) contiguously along the loop (contiguous_in), reading the nodes the body writes only at
/// the cell the body writes them at (the same lane's, before or after its write), and no node
/// written at two different cells. Anything else runs serially (the final lowering round).
bool gpu_vector_loop(const For& f, const Target& target);

/// Whether the access `node[index]` moves one cell per step of `lane` (a loop over [0, lanes))
/// and its first lane is a whole number of `lanes`-element vectors from the buffer's start for
/// every value of the other symbols: every other term's and the constant's flat stride a
/// multiple of `lanes`. Where it
/// is not, the GPU printer loads or stores that access lane by lane.
bool vector_aligned(const TensorNode& node, const std::vector<AxisIndex>& index, Symbol lane, std::int64_t lanes);

/// Whether `t` is an f32 `+=` (or fma) over three distinct f32 nodes computed in f32, no operand
/// moving along the loops it is broadcast over, with at least `min_tile_work` multiply-adds: what
/// both the CPU micro-kernel and the GPU tile need.
bool is_f32_matmul_tile(const TileMma& t, const Target& target);

/// Whether `t` runs as the target's f32 micro-kernel: SIMD and a kernel shape, an f32 `+=` over
/// three distinct f32 nodes, no operand moving along the loops it is broadcast over, and at least
/// `min_tile_work` multiply-adds.
bool runs_as_kernel(const TileMma& t, const Target& target);

/// Whether `t` runs on the GPU as a staged, register-blocked tile (TileMma::blocking): a GPU
/// target with `gpu_tile` blocking, a `+=` (or fma) over three distinct f32 nodes computed in
/// f32, no operand moving along the loops it is broadcast over, and at least `min_tile_work`
/// multiply-adds.
bool runs_as_gpu_tile(const TileMma& t, const Target& target);

/// The format of the tensor cores `t` runs on: both operands' nodes are rounded to one format
/// (TensorNode::rounded_to) that the target multiplies (Target::gpu_mma_formats) and `t` runs
/// as a GPU tile (runs_as_gpu_tile) with `+=` over f32; NarrowFormat::None otherwise. The caller
/// (the final lowering round) also checks the routine's writes of the operands.
NarrowFormat tensor_core_format(const TileMma& t, const Target& target);

/// `largest` shrunk for a tile of `rows` x `cols` cells over `steps`: bm (bn) halved, down to tm
/// (tn) and then with tm (tn), while half of it still covers the rows (columns); bk halved while
/// half of it covers the steps. The threads, the staged bytes and the register tile never grow.
///   fitted_blocking({64, 64, 16, 4, 4}, 17, 200, 9) == {32, 64, 16, 4, 4}
TileBlocking fitted_blocking(const TileBlocking& largest, std::int64_t rows, std::int64_t cols, std::int64_t steps);

/// The blocking a tile of `rows` x `cols` cells over `steps` runs with on `target`: the fitted
/// gpu_tile, then, while the tile would have fewer blocks than the device's compute units, a
/// smaller block (the longer side halved: fewer threads down to 64 per block, then fewer cells per
/// thread), so that every unit gets work. The bits do not depend on the blocking.
///   blocking_for_tile(target with 132 units, 256, 1024, 1024) == {32, 32, 16, 4, 4}  (256 blocks)
TileBlocking blocking_for_tile(const Target& target, std::int64_t rows, std::int64_t cols, std::int64_t steps);

/// The tensor-core blocking of a tile of `rows` x `cols` cells over `steps` in `format`: the
/// sizes of `largest` (Target::gpu_mma_tile) with bm (bn) halved down to tm (tn), then with tm
/// (tn) down to 16, while half of it still covers the rows (columns), and bk halved down to one
/// MMA's steps while half of it covers the steps; `mma` = format.
///   fitted_mma_blocking({128, 128, 32, 64, 32}, BF16, 40, 1000, 20) == {64, 128, 32, 64, 32, BF16}
TileBlocking fitted_mma_blocking(const TileBlocking& largest, NarrowFormat format, std::int64_t rows,
                                 std::int64_t cols, std::int64_t steps);

/// The default tensor-core blocking sizes for `limits` (Target::gpu_mma_tile, `mma` left None):
/// blocks of 128 x 128 cells in 32-step slices, 64 x 32 cells per warp (8 warps), halved while
/// the device cannot hold it with tf32 operands (the widest); unblocked when even one warp's
/// 16 x 16 cells would not fit.
TileBlocking default_mma_blocking(const GpuLimits& limits);

/// Whether the device launches a block of `b`: its threads within the threads-per-block and
/// first-dimension limits, its staged slices (f32 elements, or `b.mma`'s) within shared memory.
bool fits_device(const TileBlocking& b, const GpuLimits& limits);

/// `b` with its staging pipelined (TileBlocking::async_copy) where `target` copies asynchronously
/// (gpu_async_copy), nothing is converted while staged (copies_unconverted) and the two stages
/// fit the device (fits_device); else `b` unpipelined.
///   pipelined_blocking({64, 64, 16, 4, 4}, sm_90 target).async_copy == true
TileBlocking pipelined_blocking(TileBlocking b, const Target& target);

/// Elements (4 or 1) of operand `o` (t.a or t.b) that one asynchronous copy of a blocked tile's
/// staging moves, along `run` (the tile loops the slice is contiguous along, outermost first; the
/// other tile loops of `o` are `across`): 4, 16 bytes, where every four consecutive indices along
/// `run` from a multiple of four are four neighbouring f32 cells whose offset in `o` is a multiple
/// of four for every value of the loops and statics around the tile (proven from the static
/// strides and offsets: the last loop of `run` has stride 1 and a multiple of four iterations,
/// every other stride, the origin's offset and every outer symbol's coefficient are multiples of
/// four); 1 otherwise. Buffers start 16-byte aligned (each its own allocation).
///   a [64 x 40] at a[i, k], run {k}: 4;   a [64 x 41]: 1 (row i starts at 41 i)
int async_copy_elements(const TileMma& t, const TileOperand& o, const std::vector<TileAxis>& run,
                        const std::vector<TileAxis>& across);

/// The default GPU blocking for `limits`: 64 x 64 cells per block in 16-step slices, 4 x 4 per
/// thread (256 threads, 8.3 KB staged), halved while the device cannot hold it; unblocked when
/// even 4 x 4 cells on one thread would not fit.
TileBlocking default_gpu_blocking(const GpuLimits& limits);

/// A CPU with f32 vectors of `vector_bytes` (0, 16, 32 or 64; InternalError otherwise) and
/// no parallel runtime: the micro-kernel shape that fits its register file (32 vector registers
/// with AVX-512: 12 x 2 accumulators; 16 with AVX2, SSE and NEON: 6 x 2), its cache blocks and
/// the ops with exact vector forms. Backends start from it and fill in threads.
Target cpu_target(int vector_bytes);

/// A GPU with the launch limits `limits` (max_threads_per_block > 0; InternalError otherwise):
/// Grid loops are blocks and Workgroup loops threads (`workgroups`), no host parallel runtime,
/// no SIMD vectors (Vectorized loops are lowered to their serial forms), matmul tiles blocked
/// by default_gpu_blocking. GPU backends start from it and fill in their name.
///   generic_gpu_target(sm90_gpu_limits())
Target generic_gpu_target(const GpuLimits& limits);

/// The launch limits of a CUDA sm_90 device with `multiprocessors` multiprocessors (132: an
/// H200, an H100 SXM): what the backends that stand in for one (cuda-cpu, gpu-emulator) and the
/// kernel census plan for, so that they schedule the kernels such a GPU would get.
GpuLimits sm90_gpu_limits(std::int64_t multiprocessors = 132);

}  // namespace cannl::ir
