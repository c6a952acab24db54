#pragma once
// The C dialect of the C-family printer: `restrict` pointer parameters and an entry trampoline
// `<name>_entry(void **buffers, const int64_t *statics)` so the cc backend calls every routine
// through one signature.
//
//   GeneratedSource src = CDialect().print(routine, params);

#include "cannl/codegen/clike_printer.h"

namespace cannl::codegen {

class CDialect : public CLikePrinter {
 public:
  std::string pointer_param(const std::string& type, const std::string& ident) const override;
  std::string entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const override;
};

}  // namespace cannl::codegen
