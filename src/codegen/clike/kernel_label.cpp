// Readable kernel names (kernel_label.h).
#include "codegen/clike/kernel_label.h"

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

}  // namespace

std::string kernel_label(const ir::StmtRef& stmt, const std::string& section, const IdentifierTable& names,
                         bool first_assignment) {
  KernelFacts facts{{}, {}, nullptr, {}, names};
  facts.stmt(stmt, true);
  std::string label = section.empty() ? "" : one_line(section, kMaxCommentInLabel) + ": ";
  label += what(stmt, facts);
  for (std::size_t k = 0; k < facts.writes.size(); ++k) label += (k ? ", " : " -> ") + facts.writes[k];
  // A memset or a tile says all there is; a loop's first assignment tells which op it runs.
  if (first_assignment && facts.tile == nullptr && !facts.first_comment.empty()) {
    label += " (" + one_line(facts.first_comment, kMaxCommentInLabel) + ")";
  }
  return label;
}

}  // namespace cannl::codegen
