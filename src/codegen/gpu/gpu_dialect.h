#pragma once
// What the GPU dialects (CUDA C, HIP, OpenCL C; Metal next) share over the C-family printer:
// kernels are `void` functions taking every buffer they touch, annotated loops bind hardware
// indices instead of looping, and buffers are zeroed by loops (no memset in device code).
//  * A Grid loop binds its index to the block index of its slot, a Workgroup loop to the thread
//    index of its slot (ir::kernel_geometry); a loop shorter than its slot's launch extent runs
//    its body under `if (index < end)`.
//  * A WorkgroupReduce loop in the form of ir::block_reduction is a two-phase block reduction:
//    each thread's value, then a fixed balanced tree in workgroup-shared memory between barriers
//    (its steps within one wave as shuffles where the dialect spells them); any other one runs
//    serially on the slot's first thread.
//  * A blocked TileMma is a shared-memory, register-blocked GEMM over its own launch: one
//    workgroup per block of output cells, bitwise the tile's fallback; with a tensor-core
//    blocking (TileBlocking::mma), warps of MMA tiles whose instructions the dialect spells
//    (mma_tile_printer.cpp: CUDA's mma.sync and ldmatrix, OpenCL's emulation of them for tests).
//  * A Vectorized loop a thread runs (ir::gpu_vector_loop) moves 16-byte vectors where its
//    accesses are aligned and computes lane by lane: the serial loop's bits.
//  * Bit casts use the dialect's intrinsics; math functions keep their C names (OpenCL maps them).
// A dialect spells only the hardware indices, qualifiers, types and the barrier.

#include <string>

#include "cannl/codegen/clike_printer.h"

namespace cannl::codegen {

/// The <stdint.h> limit macros the prelude uses, for dialects without the header (each guarded).
std::string integer_limit_macros();

/// The vector type of `lanes` (2 or 4) lanes of dtype `t` (f32, i32, u32: ir::gpu_vector_dtype),
/// as every dialect names it: float4, int2, uint4.
std::string gpu_vector_type(ir::DType t, int lanes);

class GpuDialect : public CLikePrinter {
 public:
  /// The block (`blockIdx.x`) and thread (`threadIdx.x`) index of slot 0, 1 or 2.
  virtual std::string block_index(int slot) const = 0;
  virtual std::string thread_index(int slot) const = 0;
  /// The four bit casts, each as `(<argument>)` applied to a function or macro name.
  virtual std::string f32_bits_fn() const = 0;  // float -> int32_t
  virtual std::string bits_f32_fn() const = 0;  // int32_t -> float
  virtual std::string f64_bits_fn() const = 0;  // double -> int64_t
  virtual std::string bits_f64_fn() const = 0;  // int64_t -> double
  /// The `value` of the lane `delta` places above this one in its wave (HIP: `__shfl_down`;
  /// CUDA: `__shfl_down_sync` over the mask of the first `lanes` lanes, the ones that take part),
  /// or "" where the dialect has no shuffles: block reductions then combine in shared memory only.
  virtual std::string shuffle_down(const std::string& value, const std::string& delta, int lanes) const {
    (void)value;
    (void)delta;
    (void)lanes;
    return "";
  }

  bool returns_status() const override { return false; }
  /// The C family's words and every identifier the dialect's own spellings put in a kernel (its
  /// hardware indices, barrier, shuffle, vector types, loads, stores and constructors: `uint4`,
  /// `make_float4`, `vload4`, `CLK_LOCAL_MEM_FENCE`): a parameter of that name would hide it.
  std::set<std::string> reserved_words() const override;
  void append_bitcast_helpers(std::vector<PreludeHelper>& out) const override;
  std::string zero_out(const std::string& ident, std::int64_t elements, std::size_t bytes) const override;
  void print_grid(BodyPrinter& p, const ir::For& f, const std::string& name) const override;
  void print_workgroup(BodyPrinter& p, const ir::For& f, const std::string& name) const override;
  /// A thread's vector loop (ir::gpu_vector_loop): whole-vector loads of the aligned contiguous
  /// reads, the lanes' arithmetic one by one, whole-vector stores (vector_loop_printer.cpp).
  void print_vectorized(BodyPrinter& p, const ir::For& f, const std::string& name) const override;
  /// The vector of `vtype` (float4) at `element` (`x[offset]`, 16-byte aligned), stored there,
  /// and the constructor a vector is built of its lanes' values with (`make_float4`,
  /// `(float4)`); lanes are `.x .y .z .w` in every dialect.
  virtual std::string vector_load(const std::string& vtype, int lanes, const std::string& element) const = 0;
  virtual std::string vector_store(const std::string& vtype, int lanes, const std::string& element,
                                   const std::string& value) const = 0;
  virtual std::string vector_constructor(const std::string& vtype) const = 0;
  /// A blocked matmul tile (ir::TileMma::blocking): staged in shared memory, register-blocked
  /// (tile_printer.cpp).
  void print_tile(BodyPrinter& p, const ir::TileMma& t) const override;

  // ---- tensor-core tiles (TileBlocking::mma; mma_tile_printer.cpp) ----

  /// Whether the dialect spells the warp-level helpers a tensor-core tile calls:
  ///   cannl_ldsm_x4 / cannl_ldsm_x4_trans (uint32_t r[4], slice, int offset): ldmatrix .x4 of
  ///     16-bit elements, this lane's row at slice[offset];
  ///   cannl_mma_bf16 / cannl_mma_f16 (float c[4], uint32_t a[4], uint32_t b[2]) and
  ///   cannl_mma_tf32 (float c[4], uint32_t a[4], uint32_t b[2]): c += a * b, m16n8k16 / m16n8k8,
  /// each followed by the warp arguments of declare_warp_scratch, and cannl_mma_f16_bits (float):
  /// the f16 bits of a value exact in f16. Only for targets whose
  /// gpu_mma_formats the backend fills (CUDA), or that a test asks for (OpenCL's emulation).
  virtual bool spells_warp_mma() const { return false; }
  /// Declares what the helpers need besides their operands for a tile of `warps` warps, at
  /// kernel scope, and returns the arguments that follow the operands in every helper call
  /// ("" for CUDA). The printer has bound `cannl_warp` and `cannl_lane`.
  virtual std::string declare_warp_scratch(BodyPrinter& p, std::int64_t warps) const;
  // ---- pipelined staging (TileBlocking::async_copy; async_copy_helpers.h) ----

  /// Whether the dialect spells the asynchronous copies a pipelined tile calls:
  ///   cannl_cp_async16 / cannl_cp_async4 (shared float* dst, global const float* src,
  ///     int src_bytes): copies 16 (4) bytes, those past src_bytes written as zeros;
  ///   cannl_cp_async_commit(): closes the group of this thread's copies issued since the last;
  ///   cannl_cp_async_wait_all(): waits until this thread's copies are done;
  /// the copies and the wait followed by the argument of async_copy_queue where it has one.
  /// Only for targets whose gpu_async_copy the backend sets (CUDA sm_80 and later), or that a
  /// test asks for (OpenCL's emulation).
  virtual bool spells_async_copy() const { return false; }
  /// Declares, in the tile's scope, what the copies need besides their operands for a thread
  /// that has at most `copies` in flight, and returns the argument that follows the operands
  /// of every copy and wait ("" for CUDA; the OpenCL emulation's queue).
  virtual std::string async_copy_queue(BodyPrinter& p, std::int64_t copies) const {
    (void)p;
    (void)copies;
    return "";
  }

  /// A workgroup-shared array whose elements start 16-byte aligned (ldmatrix reads 16-byte rows).
  virtual std::string aligned_shared_array(const std::string& type, const std::string& ident, std::int64_t elements) const {
    return shared_array(type, ident, elements);
  }

 private:
  /// A tensor-core tile (print_tile with TileBlocking::mma).
  void print_mma_tile(BodyPrinter& p, const ir::TileMma& t) const;
  void bind_hardware_index(BodyPrinter& p, const ir::For& f, const std::string& name, bool grid) const;
  /// A WorkgroupReduce loop: a block reduction in shared memory (block_reduction_printer.cpp),
  /// or, where the form or a divergent position does not allow one, the serial loop on the
  /// slot's first thread.
  void print_workgroup_reduce(BodyPrinter& p, const ir::For& f, const std::string& name) const;
};

}  // namespace cannl::codegen
