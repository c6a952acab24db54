#pragma once
// The C dialect of the C-family printer: file-local (`static`) routines with `restrict` pointer
// parameters and one exported entry trampoline
// `cannl_entry_<name>(void **buffers, const int64_t *statics)` so the cc backend calls every
// routine through one signature. Its renderings of annotated statements:
//  * Grid loops: contiguous chunks under `#pragma omp parallel for` (grid_printer.cpp);
//  * Vectorized loops: GCC/Clang vector types with a serial remainder (vector_printer.cpp);
//  * f32 exp and tanh: cannl's own (src/ir/own_math.c, and its lane-wise copy in simd.cpp);
//  * matmul tiles: one call of the packed register-tiled sgemm kernel library (tile_printer.cpp);
//  * kernel timing with the monotonic clock (kernel_profile.cpp).
//
//   GeneratedSource src = CDialect().print(routine, params, {.target = target});

#include "cannl/codegen/clike_printer.h"

namespace cannl::codegen {

class CDialect : public CLikePrinter {
 public:
  /// Routines are file-local; only the entry trampoline is exported.
  std::string function_prefix() const override { return "static"; }
  std::string pointer_param(const std::string& type, const std::string& ident) const override;
  bool returns_status() const override { return true; }
  /// cannl_expf and cannl_tanhf for f32 (and the narrow floats computed in f32): the interpreter's
  /// own exp and tanh, whose vector forms compute the same bits.
  std::string own_function(ir::Op op, ir::DType compute) const override;
  std::string entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const override;

  void append_prelude_helpers(std::vector<PreludeHelper>& out, const ir::Target& target) const override;
  void print_grid(BodyPrinter& p, const ir::For& f, const std::string& name) const override;
  /// Large buffers are zeroed by the OpenMP team (cannl_zero_shared), a piece per thread.
  std::string zero_out(const std::string& ident, std::int64_t elements, std::size_t bytes) const override;
  void print_vectorized(BodyPrinter& p, const ir::For& f, const std::string& name) const override;
  void print_tile(BodyPrinter& p, const ir::TileMma& t) const override;
  std::string vector_type(ir::DType t, int lanes) const override;
  std::string timed_body(BodyPrinter& p, const ir::StmtRef& body, const IdentifierTable& names,
                         std::vector<TimedKernel>& kernels) const override;
  std::string timed_file(const FileParts& parts, const std::vector<TimedKernel>& kernels,
                         const std::string& symbol) const override;
};

}  // namespace cannl::codegen
