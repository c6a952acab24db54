// Kernel timing in generated C (see kernel_profile.h).
#include "codegen/c/kernel_profile.h"

#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"

#include <algorithm>

namespace cannl::codegen {

namespace {

// Longest assignment text kept in a label: enough to recognize the op, short enough for a table.
constexpr std::size_t kMaxCommentInLabel = 60;

// What a label says about a statement: the perfect loop nest on top, the nodes it writes, its
// matmul tile and the first assignment comment inside.
struct KernelFacts {
  std::vector<std::int64_t> nest;
  std::vector<std::string> writes;
  const ir::TileMma* tile = nullptr;
  std::string first_comment;
  const IdentifierTable& names;

  void wrote(const ir::TensorNode& node) {
    const std::string& name = names.node(node);
    if (std::find(writes.begin(), writes.end(), name) == writes.end()) writes.push_back(name);
  }
  void noted(const std::string& comment) {
    if (first_comment.empty()) first_comment = comment;
  }
  void stmt(const ir::StmtRef& s, bool on_top) {
    std::visit([&](const auto& x) { visit(x, on_top); }, s->node);
  }
  void visit(const ir::Seq& q, bool on_top) {
    for (const auto& x : q.stmts) stmt(x, on_top && q.stmts.size() == 1);
  }
  void visit(const ir::For& f, bool on_top) {
    if (on_top) nest.push_back(f.end - f.begin);
    stmt(f.body, on_top);
  }
  void visit(const ir::TileMma& t, bool) {
    if (tile == nullptr) tile = &t;
    wrote(*t.d.node);
  }
  void visit(const ir::Set& s, bool) {
    wrote(*s.node);
    noted(s.comment);
  }
  void visit(const ir::SetDynamic& s, bool) {
    wrote(*s.node);
    noted(s.comment);
  }
  void visit(const ir::ZeroOut& z, bool) { wrote(*z.node); }
  void visit(const ir::If& i, bool) { stmt(i.body, false); }
  void visit(const ir::Comment& c, bool) { noted(c.text); }
  void visit(const ir::SetLocal&, bool) {}
  void visit(const ir::DeclareLocal&, bool) {}
  void visit(const ir::Barrier&, bool) {}
};

std::string times(const std::vector<std::int64_t>& extents) {
  std::string out;
  for (std::size_t k = 0; k < extents.size(); ++k) out += (k ? "x" : "") + std::to_string(extents[k]);
  return out;
}

std::string what(const ir::StmtRef& stmt, const KernelFacts& f) {
  if (std::holds_alternative<ir::ZeroOut>(stmt->node)) return "memset";
  if (f.tile != nullptr) {
    // A loop over tiles (a Grid split of a matmul's columns, a batch) says how many calls it makes.
    return (f.nest.empty() ? "" : "loop " + times(f.nest) + " of ") + "matmul tile " +
           times({f.tile->rows(), f.tile->cols(), f.tile->steps()});
  }
  if (!f.nest.empty()) return "loop " + times(f.nest);
  return "statement";
}

// One line, whitespace runs collapsed, at most `limit` characters.
std::string one_line(const std::string& text, std::size_t limit) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() <= limit ? out : out.substr(0, limit - 3) + "...";
}

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
         "static int64_t cannl_kernel_calls[" + slots + "];\n"
         "static int64_t cannl_kernel_ns[" + slots + "];\n"
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
         "/* Entry point for loaders: the kernel timing table (counters accumulate over calls). */\n"
         "const cannl_kernel_profile *" + symbol + "(void) {\n"
         "  static const cannl_kernel_profile table = {" + std::to_string(kernels.size()) +
         ", cannl_kernel_labels, cannl_kernel_lines, cannl_kernel_calls, cannl_kernel_ns};\n"
         "  return &table;\n"
         "}\n";
}

}  // namespace

std::string kernel_label(const ir::StmtRef& stmt, const std::string& section, const IdentifierTable& names) {
  KernelFacts facts{{}, {}, nullptr, {}, names};
  facts.stmt(stmt, true);
  std::string label = section.empty() ? "" : one_line(section, kMaxCommentInLabel) + ": ";
  label += what(stmt, facts);
  for (std::size_t k = 0; k < facts.writes.size(); ++k) label += (k ? ", " : " -> ") + facts.writes[k];
  // A memset or a tile says all there is; a loop's first assignment tells which op it runs.
  if (facts.tile == nullptr && !facts.first_comment.empty()) {
    label += " (" + one_line(facts.first_comment, kMaxCommentInLabel) + ")";
  }
  return label;
}

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
