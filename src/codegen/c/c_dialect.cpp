// The C dialect (see c_dialect.h) and emit_c.
#include "codegen/c/c_dialect.h"

namespace cannl::codegen {

std::string CDialect::pointer_param(const std::string& type, const std::string& ident) const {
  // Distinct nodes never share storage, which is what `restrict` promises the compiler.
  return type + " *restrict " + ident;
}

std::string CDialect::entry_trampoline(const RoutineSignature& sig, std::string& entry_symbol) const {
  // Only the entry is exported, under a prefixed name: an exported routine named like a libc
  // function (`step`, `index`) would be interposed by libc's symbol and crash when called.
  entry_symbol = "cannl_entry_" + sig.name;
  std::string args;
  std::size_t k = 0;
  for (; k < sig.pointer_types.size(); ++k) {
    args += (k ? ", " : "") + std::string("(") + sig.pointer_types[k] + " *)buffers[" +
            std::to_string(k) + "]";
  }
  for (std::size_t s = 0; s < sig.num_statics; ++s) {
    args += (k + s ? ", " : "") + std::string("statics[") + std::to_string(s) + "]";
  }
  return "/* Entry point for loaders: buffers[k] is the k-th pointer parameter. */\n"
         "void " + entry_symbol + "(void **buffers, const int64_t *statics) {\n" +
         (sig.pointer_types.empty() ? "  (void)buffers;\n" : "") +
         (sig.num_statics == 0 ? "  (void)statics;\n" : "") +
         "  " + sig.name + "(" + args + ");\n}\n";
}

GeneratedSource emit_c(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                       const CpuCodegenOptions& options) {
  return CDialect().print(routine, params, options);
}

}  // namespace cannl::codegen
