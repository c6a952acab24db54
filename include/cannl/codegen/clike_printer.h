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
#include "cannl/ir/loop_ir.h"

namespace cannl::codegen {

/// The parameter list of a generated routine, for trampolines and launchers.
struct RoutineSignature {
  std::string name;                       // the routine's function name
  std::vector<std::string> pointer_types; // storage type of each pointer parameter, e.g. "float"
  std::vector<std::string> params;        // each full parameter declaration
  std::size_t num_statics = 0;
};

class CLikePrinter {
 public:
  virtual ~CLikePrinter() = default;

  /// Renders `routine` with `params[k]` bound to the k-th pointer parameter.
  GeneratedSource print(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                        const CpuCodegenOptions& options = {}) const;

  // ---- dialect hooks (public so the shared printing code can call them) ----

  /// Written before the routine's return type: "" in C, `extern "C" __global__` in CUDA.
  virtual std::string function_prefix() const { return ""; }
  /// Written before each prelude helper: "static inline" in C.
  virtual std::string helper_prefix() const { return "static inline"; }
  /// One pointer parameter: "float *restrict w1" in C.
  virtual std::string pointer_param(const std::string& type, const std::string& ident) const;
  /// One static-symbol parameter: "const int64_t batch".
  virtual std::string static_param(const std::string& ident) const;
  /// C type holding a *value* of dtype `t` in expressions (narrow floats compute as "float").
  virtual std::string value_type(ir::DType t) const;
  /// C type of one element of a buffer of dtype `t` (f16/bf16 "uint16_t", fp8 "uint8_t").
  virtual std::string storage_type(ir::DType t) const;
  /// Suffix of libm names for a float compute type: "f" for f32, "" for f64.
  virtual std::string libm_suffix(ir::DType compute) const;
  /// Lines before the prelude (#include directives in C).
  virtual std::string prelude_header() const;
  /// Text after the routine (the C entry trampoline); "" for none. Sets `entry_symbol`.
  virtual std::string entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const;
  /// Identifiers the dialect reserves beyond the shared C set.
  virtual std::set<std::string> reserved_words() const;
};

}  // namespace cannl::codegen
