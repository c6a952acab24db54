#pragma once
// The C dialect of the C-family printer: file-local (`static`) routines with `restrict` pointer
// parameters and one exported entry trampoline
// `cannl_entry_<name>(void **buffers, const int64_t *statics)` so the cc backend calls every
// routine through one signature.
//
//   GeneratedSource src = CDialect().print(routine, params);

#include "cannl/codegen/clike_printer.h"

namespace cannl::codegen {

class CDialect : public CLikePrinter {
 public:
  /// Routines are file-local; only the entry trampoline is exported.
  std::string function_prefix() const override { return "static"; }
  std::string pointer_param(const std::string& type, const std::string& ident) const override;
  std::string entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const override;
};

}  // namespace cannl::codegen
