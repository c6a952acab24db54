// Kernel timing in generated C (CodegenOptions::profile_kernels, config key profile_kernels).
//
// A "kernel" is one top-level statement of the routine body (nested block Seqs flattened): a
// loop nest, a matmul tile, a memset. The timed body reads the monotonic clock once before the
// first kernel and once after each one (`cannl_profile_lap`), adding the lap to the kernel's
// `calls` / `total_ns` counters, thread-local arrays of the generated source: the devices of a
// multi-device context run one loaded library on their worker threads at once, and each must
// count (and reset) only its own calls. The exported `cannl_profile_<name>()` returns the calling
// thread's counters with a label and the source line of every kernel (layout:
// codegen::KernelProfileTable). Comments and scalar declarations are not kernels.
//
//   std::vector<TimedKernel> kernels;
//   std::string body_text = CDialect().timed_body(printer, routine.body, names, kernels);

#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/kernel_label.h"

#include <algorithm>

namespace cannl::codegen {

namespace {

// `text` as the body of a C string literal (`?` escaped against trigraphs under -std=c11).
std::string c_string_body(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '?') out.push_back('\\');
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  }
  return out;
}

bool is_kernel(const ir::StmtRef& s) {
  return !std::holds_alternative<ir::Comment>(s->node) &&
         !std::holds_alternative<ir::DeclareLocal>(s->node) &&
         !std::holds_alternative<ir::Barrier>(s->node);
}

std::int64_t count_lines(const std::string& text) {
  return static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n'));
}

// The top-level statements of `s` in order, nested Seqs flattened, each with its section (the
// last Comment seen at top level before it).
void print_top_level(BodyPrinter& printer, const ir::StmtRef& s, const IdentifierTable& names,
                     std::string& section, std::string& text, std::vector<TimedKernel>& kernels) {
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    for (const auto& x : q->stmts) print_top_level(printer, x, names, section, text, kernels);
    return;
  }
  if (const auto* c = std::get_if<ir::Comment>(&s->node)) section = c->text;
  if (!is_kernel(s)) {
    text += printer.print(s, 1);
    return;
  }
  kernels.push_back({kernel_label(s, section, names), count_lines(text)});
  text += printer.print(s, 1);
  text += "  cannl_profile_lap(" + std::to_string(kernels.size() - 1) + ", &cannl_profile_t);\n";
}

// Lines before the first #include: clock_gettime needs POSIX under -std=c11.
std::string profile_feature_macros() {
  return "#define _POSIX_C_SOURCE 199309L /* clock_gettime, for profile_kernels */\n"
         "#include <time.h>\n";
}

// The counters and clock helpers, placed before the routine.
std::string profile_prologue(std::size_t kernels) {
  // C has no zero-length arrays: a routine without kernels keeps one unused slot.
  const std::string slots = std::to_string(std::max<std::size_t>(kernels, 1));
  return "/* profile_kernels: calls and nanoseconds of each top-level statement (kernel). */\n"
         "/* Per thread: devices sharing this library run it on their own threads at once. */\n"
         "static _Thread_local int64_t cannl_kernel_calls[" + slots + "];\n"
         "static _Thread_local int64_t cannl_kernel_ns[" + slots + "];\n"
         "static inline int64_t cannl_profile_now(void) {\n"
         "  struct timespec t;\n"
         "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
         "  return (int64_t)t.tv_sec * 1000000000 + (int64_t)t.tv_nsec;\n"
         "}\n"
         "/* Charges the time since *start to kernel k and restarts the clock. */\n"
         "static inline void cannl_profile_lap(int64_t k, int64_t *start) {\n"
         "  const int64_t now = cannl_profile_now();\n"
         "  cannl_kernel_calls[k] += 1;\n"
         "  cannl_kernel_ns[k] += now - *start;\n"
         "  *start = now;\n"
         "}\n\n";
}

// The labels, source lines and the exported `symbol` returning the table.
std::string profile_table(const std::string& symbol, const std::vector<TimedKernel>& kernels,
                          std::int64_t first_body_line) {
  std::string labels;
  std::string lines;
  for (const auto& k : kernels) {
    labels += "  \"" + c_string_body(k.label) + "\",\n";
    lines += "  " + std::to_string(first_body_line + k.body_line) + ",\n";
  }
  if (kernels.empty()) {
    labels = "  \"\",\n";
    lines = "  0,\n";
  }
  return "/* profile_kernels: each kernel's label and first line in this file. */\n"
         "static const char *const cannl_kernel_labels[] = {\n" + labels + "};\n"
         "static const int64_t cannl_kernel_lines[] = {\n" + lines + "};\n"
         "typedef struct {\n"
         "  int64_t kernels;\n"
         "  const char *const *labels;\n"
         "  const int64_t *lines;\n"
         "  int64_t *calls;\n"
         "  int64_t *total_ns;\n"
         "} cannl_kernel_profile;\n"
         "/* Entry point for loaders: the kernel timing table of the calling thread's counters\n"
         "   (they accumulate over its calls). A thread's counters have no constant address. */\n"
         "const cannl_kernel_profile *" + symbol + "(void) {\n"
         "  static _Thread_local cannl_kernel_profile table;\n"
         "  table = (cannl_kernel_profile){" + std::to_string(kernels.size()) +
         ", cannl_kernel_labels, cannl_kernel_lines, cannl_kernel_calls, cannl_kernel_ns};\n"
         "  return &table;\n"
         "}\n";
}

}  // namespace

std::string CDialect::timed_body(BodyPrinter& printer, const ir::StmtRef& body, const IdentifierTable& names,
                                 std::vector<TimedKernel>& kernels) const {
  // Printing statement by statement gives the same text as printing the Seq at once: a Seq
  // prints nothing of its own and the printer's naming state carries over between calls.
  std::string text = "  int64_t cannl_profile_t = cannl_profile_now();\n";
  std::string section;
  print_top_level(printer, body, names, section, text, kernels);
  return text;
}

std::string CDialect::timed_file(const FileParts& parts, const std::vector<TimedKernel>& kernels,
                                 const std::string& symbol) const {
  const std::string before = parts.header + profile_feature_macros() + parts.includes + "\n" +
                             parts.prelude + profile_prologue(kernels.size()) + parts.opening;
  const std::int64_t first_body_line = count_lines(before) + 1;
  return before + parts.rest + "\n" + profile_table(symbol, kernels, first_body_line);
}

}  // namespace cannl::codegen
