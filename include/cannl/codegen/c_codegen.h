#pragma once
// C code generation for the cc backend: one readable C file per lowered routine (the C dialect
// of the C-family printer: OpenMP Grid chunks, GCC/Clang vector types, calls of the sgemm kernel
// library, kernel timing with the monotonic clock).
//
// The generated function takes one typed pointer per parameter node (in the given order) and one
// `const int64_t` per static symbol; an entry trampoline `<name>_entry(void **buffers,
// const int64_t *statics)` casts and forwards, so loaders need only one signature.
//
//   auto src = codegen::emit_c(routine, {a, b, c});
//   // src.text holds "void add(float *restrict a, ...)"; src.entry_symbol == "add_entry"

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::codegen {

/// Source text of one routine and the symbol a loader calls.
struct GeneratedSource {
  std::string text;
  std::string entry_symbol;
  /// With CodegenOptions::profile_kernels: the exported `const cannl_kernel_profile
  /// *cannl_profile_<name>(void)` returning the routine's kernel timing table; "" otherwise.
  std::string profile_symbol;
};

/// The table `cannl_profile_<name>()` returns (the C struct `cannl_kernel_profile` of the
/// generated source has this layout): per kernel k, labels[k] ("forward: matmul tile 256x1024x1024
/// -> h1"), lines[k] (1-based line of the kernel's first statement in the generated .c) and the
/// counters the routine adds to on every call, calls[k] and total_ns[k] (loaders may zero them).
/// The counters are the calling thread's own: call it on the thread that ran the routine.
struct KernelProfileTable {
  std::int64_t kernels;
  const char* const* labels;
  const std::int64_t* lines;
  std::int64_t* calls;
  std::int64_t* total_ns;
};

/// What the printer needs besides the routine. The routine must already be lowered for
/// `target` (schedule::lower_for_target): the printer spells its annotations (Grid chunks, vector
/// loops, tiles with their team and zero start) and decides nothing; an annotation the dialect
/// cannot spell is an InternalError.
struct CodegenOptions {
  /// The backend's target record (vector width, micro-kernel shape, threads).
  ir::Target target = ir::cpu_target(0);
  /// Times every top-level statement of the routine (one "kernel": a loop nest, a matmul tile, a
  /// memset) with the monotonic clock into a static table exported as `profile_symbol`
  /// (kernel_profile.h). Off: the text is exactly what it was before profiling existed.
  bool profile_kernels = false;
};

/// Generates C for `routine`, binding `params[k]` to the k-th pointer parameter. Nodes the routine
/// touches that are not parameters become zero-initialized arrays local to the function.
/// Throws InternalError on malformed IR (an unbound loop symbol, an op with no C spelling for its
/// type).
GeneratedSource emit_c(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                       const CodegenOptions& options = {});

/// One translation unit of a split routine.
struct SourceUnit {
  /// File stem: the routine's name for its main unit, "<routine>.part03" for a group of kernels.
  std::string name;
  std::string text;
  /// Hot units hold kernels worth the full optimization level; cold ones (the main unit, and
  /// kernels of little work per call) are compiled at a lower one.
  bool hot = false;
  /// The unit holds no loop: kernel calls, zeroing, declarations and scalar statements (a main
  /// unit all of whose loops are kernels). An optimizer has nothing to speed up, so it is
  /// compiled without one (same IEEE operations: no fast-math, no contraction).
  bool plain = false;
};

/// A routine printed as several translation units (emit_c_split).
struct SplitSource {
  /// The main unit's text, the entry symbol and, profiled, the profile symbol (the kernel table
  /// is the main unit's: a kernel's line is that of its call).
  GeneratedSource routine;
  /// The main unit (the routine function, its entry, one call per kernel) first, then the groups
  /// of kernel functions it calls.
  std::vector<SourceUnit> units;
  int kernels = 0;         // kernel calls of the routine
  int unique_kernels = 0;  // distinct kernel functions among them
};

/// How emit_c_split groups kernels into translation units.
struct SplitOptions {
  /// A group ends at the first content-defined boundary after this many lines (and at ten times
  /// as many in any case).
  std::size_t unit_lines = 250;
};

/// Generates C for `routine` like emit_c, with every self-contained top-level loop nest or matmul
/// tile (a kernel) as a function of its own: kernels of equal text (a model's repeated layers)
/// are one function, and the functions are grouped into translation units that can be compiled
/// in parallel and cached one by one. Results are bitwise those of emit_c's file.
/// Throws InternalError like emit_c.
SplitSource emit_c_split(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                         const CodegenOptions& options = {}, const SplitOptions& split = {});

}  // namespace cannl::codegen
