#pragma once
// The one C-family printer (STYLE.md: "Thin dialects"). It renders a lowered routine as a
// readable source file: header comment, prelude (only the helpers used), the routine function and
// an optional entry trampoline. The typing and conversion rules of cannl/ir/loop_ir.h live here,
// once; dialects (C, CUDA, OpenCL, Metal) override only the spelling hooks below.
//
//   class CDialect : public CLikePrinter { ... };
//   GeneratedSource src = CDialect().print(routine, params);

#include <set>
#include <string>
#include <vector>

#include "cannl/codegen/c_codegen.h"
#include "cannl/ir/dtype.h"
#include "cannl/ir/kernel_geometry.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::codegen {

class IdentifierTable;
struct PreludeHelper;

/// The parameter list of a generated routine, for trampolines and launchers.
struct RoutineSignature {
  std::string name;                       // the routine's function name
  std::vector<std::string> pointer_types; // storage type of each pointer parameter, e.g. "float"
  std::vector<std::string> params;        // each full parameter declaration
  std::size_t num_statics = 0;
};

class BodyPrinter;

/// One timed statement of a profiled routine (CodegenOptions::profile_kernels): its label and
/// the 0-based line of its first text line in the body text.
struct TimedKernel {
  std::string label;
  std::int64_t body_line = 0;
};

/// The pieces of a generated file, for dialects that add text around the routine (kernel timing).
struct FileParts {
  std::string header, includes, prelude, opening, rest;
};

/// One kernel of a GPU module: its statements (under the routine's statics) and launch geometry.
struct KernelBody {
  ir::StmtRef body;
  ir::KernelGeometry geometry;
};

/// A kernel as printed: its function name, the nodes it takes, one pointer each, in parameter
/// order (every static of the routine follows them, in the routine's order), and a readable
/// label for profiles ("loop 64x128 -> y (y[i0, i1] =:+ ...)").
struct PrintedKernel {
  std::string name;
  std::vector<ir::NodeRef> params;
  std::string label;
};

/// The source of a GPU module: one file, one kernel function per KernelBody, in launch order.
struct GeneratedModule {
  std::string text;
  std::vector<PrintedKernel> kernels;
};

class CLikePrinter {
 public:
  virtual ~CLikePrinter() = default;

  /// Renders `routine` with `params[k]` bound to the k-th pointer parameter.
  GeneratedSource print(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                        const CodegenOptions& options = {}) const;
  /// Renders `kernels` (the fissioned statements of `routine`) as one module of kernel functions
  /// named `<routine>_k<index>`. Every node a kernel touches is one of its pointer parameters:
  /// a GPU module has no local arrays (the backend gives the routine's Local nodes device memory).
  GeneratedModule print_kernels(const ir::LoweredRoutine& routine, const std::vector<KernelBody>& kernels,
                                const CodegenOptions& options = {}) const;
  /// Every prelude helper of this dialect for `target`, dependencies before their users.
  std::vector<PreludeHelper> prelude_helpers(const ir::Target& target) const;

  // ---- dialect hooks (public so the shared printing code can call them) ----

  /// Written before the routine's return type: "" in C, `extern "C" __global__` in CUDA.
  virtual std::string function_prefix() const { return ""; }
  /// Written before each prelude helper: "static inline" in C.
  virtual std::string helper_prefix() const { return "static inline"; }
  /// One pointer parameter: "float *restrict w1" in C.
  virtual std::string pointer_param(const std::string& type, const std::string& ident) const;
  /// A GPU kernel's pointer parameter to a buffer that its threads write and read across a
  /// barrier: never `restrict` (which would let the compiler keep a thread's own load across the
  /// barrier and miss what the other threads wrote); "float *w1" by default.
  virtual std::string shared_pointer_param(const std::string& type, const std::string& ident) const;
  /// One static-symbol parameter: "const int64_t batch".
  virtual std::string static_param(const std::string& ident) const;
  /// C type holding a *value* of dtype `t` in expressions (narrow floats compute as "float").
  virtual std::string value_type(ir::DType t) const;
  /// C type of one element of a buffer of dtype `t` (f16/bf16 "uint16_t", fp8 "uint8_t").
  virtual std::string storage_type(ir::DType t) const;
  /// Suffix of libm names for a float compute type: "f" for f32, "" for f64.
  virtual std::string libm_suffix(ir::DType compute) const;
  /// The prelude function the dialect calls for unary `op` computed in `compute` instead of the
  /// spelling of ops.def, or "" for that spelling (C: cannl's own f32 exp and tanh).
  virtual std::string own_function(ir::Op op, ir::DType compute) const;
  /// Lines before the prelude (#include directives in C).
  virtual std::string prelude_header() const;
  /// Text after the routine (the C entry trampoline); "" for none. Sets `entry_symbol`.
  virtual std::string entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const;
  /// Whether routines return an int status (C: CANNL_STATUS_OK, or CANNL_STATUS_OUT_OF_MEMORY
  /// when a heap local or a kernel's scratch could not be allocated); else they return void.
  virtual bool returns_status() const { return false; }
  /// Identifiers the dialect reserves beyond the shared C set.
  virtual std::set<std::string> reserved_words() const;
  /// The prelude's bit casts between floats and integers of their width (cannl_bits_of_f32,
  /// cannl_f32_of_bits, cannl_bits_of_f64, cannl_f64_of_bits): memcpy in C, intrinsics on GPUs.
  virtual void append_bitcast_helpers(std::vector<PreludeHelper>& out) const;
  /// The statement setting all `bytes` bytes (`elements` elements) of buffer `ident` to zero.
  virtual std::string zero_out(const std::string& ident, std::int64_t elements, std::size_t bytes) const;

  // ---- rendering hooks of annotated statements; the defaults throw InternalError (the dialect
  // cannot spell it, so the target record should not have allowed the schedule to ask) ----

  /// Extra prelude helpers the dialect's renderings use (vector types, parallel helpers), for
  /// `target`; appended after the shared ones.
  virtual void append_prelude_helpers(std::vector<PreludeHelper>& out, const ir::Target& target) const;
  /// A Grid loop (its index already bound to `name`): OpenMP chunks in C; on GPUs the block
  /// index binding.
  virtual void print_grid(BodyPrinter& p, const ir::For& f, const std::string& name) const;
  /// A Workgroup / WorkgroupReduce loop: the thread index binding of GPU dialects (the kernel's
  /// geometry is BodyPrinter::geometry()).
  virtual void print_workgroup(BodyPrinter& p, const ir::For& f, const std::string& name) const;
  /// A Vectorized loop that has an exact vector form on the target (ir::vector_form).
  virtual void print_vectorized(BodyPrinter& p, const ir::For& f, const std::string& name) const;
  /// A TileMma the target runs as its micro-kernel (ir::runs_as_kernel).
  virtual void print_tile(BodyPrinter& p, const ir::TileMma& t) const;
  /// The type of `lanes` values of dtype `t` held together (C: GCC vector types, `cannl_f32x16`;
  /// CUDA / OpenCL: `float4`).
  virtual std::string vector_type(ir::DType t, int lanes) const;
  /// The statement a Barrier becomes; "" where one thread of control runs a chunk (C).
  virtual std::string barrier() const { return ""; }
  /// Whether a region all of a block's threads enter alike (a Grid loop's guard, an If holding a
  /// Barrier) is bracketed by barriers when barriers are printed in it: one before it and one at
  /// its end, where none is there already. OpenCL, for two PoCL 3.1 defects (every work-group
  /// method): a kernel whose barrier is followed, inside such a region, by a statement on one
  /// thread and, after the region, by another crashes; a region after a statement on one thread
  /// is skipped altogether (docs/ARCHITECTURE.md, "PoCL").
  virtual bool brackets_uniform_regions_with_barriers() const { return false; }
  /// A workgroup-shared array declaration (GPU dialects).
  virtual std::string shared_array(const std::string& type, const std::string& ident, std::int64_t elements) const;
  /// A GPU kernel function's declaration up to its parameter list: qualifiers, the return type,
  /// launch geometry attributes and `name` (`extern "C" __global__ void __launch_bounds__(256) f`).
  virtual std::string kernel_head(const std::string& name, const ir::KernelGeometry& geometry) const;
  /// Kernel timing (CodegenOptions::profile_kernels): the body with a timer around each kernel,
  /// appending the kernels to `kernels`, then the whole file around it.
  virtual std::string timed_body(BodyPrinter& p, const ir::StmtRef& body, const IdentifierTable& names,
                                 std::vector<TimedKernel>& kernels) const;
  virtual std::string timed_file(const FileParts& parts, const std::vector<TimedKernel>& kernels,
                                 const std::string& symbol) const;
};

}  // namespace cannl::codegen
