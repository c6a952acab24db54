// The C dialect (see c_dialect.h) and emit_c.
#include "codegen/c/c_dialect.h"

#include "cannl/support/error.h"
#include "codegen/clike/prelude.h"
#include "codegen/c/kernel_texts.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

namespace {

// ZeroOuts of at least this many bytes are shared out over the OpenMP team: one thread's memset
// of several megabytes leaves the other cores idle.
constexpr std::size_t kSharedZeroBytes = std::size_t{4} << 20;

}  // namespace

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
  return "/* Entry point for loaders: buffers[k] is the k-th pointer parameter. Returns\n"
         "   CANNL_STATUS_OK, or CANNL_STATUS_OUT_OF_MEMORY when scratch memory could not be allocated. */\n"
         "int " + entry_symbol + "(void **buffers, const int64_t *statics) {\n" +
         (sig.pointer_types.empty() ? "  (void)buffers;\n" : "") +
         (sig.num_statics == 0 ? "  (void)statics;\n" : "") +
         "  return " + sig.name + "(" + args + ");\n}\n";
}

std::string CDialect::own_function(ir::Op op, ir::DType compute) const {
  if (compute != ir::DType::F32) return "";
  if (op == ir::Op::Exp) return "cannl_expf";
  if (op == ir::Op::Tanh) return "cannl_tanhf";
  return "";
}

void CDialect::append_prelude_helpers(std::vector<PreludeHelper>& out, const ir::Target& target) const {
  // Both functions are one text (the interpreter's, src/ir/own_math.c).
  out.push_back({"cannl_expf", kernel_texts::cannl_own_math_c, {}});
  out.push_back({"cannl_tanhf", "", {"cannl_expf"}});
  out.push_back({"CANNL_STATUS_OK",
                 "/* Status codes of routines and kernels. */\n"
                 "#define CANNL_STATUS_OK 0\n#define CANNL_STATUS_OUT_OF_MEMORY 1\n",
                 {}});
  out.push_back({"cannl_check",
                 "/* Keeps a kernel's failure code in the routine's status; safe from parallel chunks. */\n"
                 "$P void cannl_check(int *status, int code) {\n"
                 "  if (code != CANNL_STATUS_OK) __atomic_store_n(status, code, __ATOMIC_RELAXED);\n}\n",
                 {"CANNL_STATUS_OK"}});
  append_parallel_helpers(out);
  if (target.vector_bytes > 0) append_simd_helpers(out, simd_width(target.vector_bytes));
}

std::string CDialect::zero_out(const std::string& ident, std::int64_t elements, std::size_t bytes) const {
  if (bytes < kSharedZeroBytes) return CLikePrinter::zero_out(ident, elements, bytes);
  return "cannl_zero_shared(" + ident + ", " + std::to_string(bytes) + ");";
}

std::string CDialect::vector_type(ir::DType t, int lanes) const {
  internal_check(t == ir::DType::F32, "codegen: the C dialect has f32 vectors only");
  return simd_width(lanes * 4).type;
}

GeneratedSource emit_c(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                       const CodegenOptions& options) {
  return CDialect().print(routine, params, options);
}

}  // namespace cannl::codegen
