// The split layout of the C dialect (emit_c_split, see cannl/codegen/c_codegen.h).
//
// Every self-contained loop nest or matmul tile at the top level of the routine (a "kernel")
// becomes a function of its own, printed with positional names (b0, b1, ... for the nodes it
// touches, s0, s1, ... for the routine's statics) and without assignment comments, so that its
// text depends only on what it computes: the four layers of a transformer print four times the
// same text, which names one function `cannl_k_<digest of the text>` that the routine calls
// four times with different buffers. The distinct functions are grouped into translation units
// the cc backend compiles in parallel and caches one by one; the routine's own unit keeps the
// local arrays, the statements that are no kernel (memsets, comments, scalar locals) and one
// call per kernel, commented with the kernel's label in the routine's own names.
//
// Groups are content-defined: a group ends after a kernel whose digest says so (one in
// kBoundaryEvery) once the group has SplitOptions::unit_lines, or at ten times as many, so that a
// changed kernel changes its own group (and at most the next, when it moves a boundary) and
// leaves the others' texts (and cached objects) alone.
#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "cannl/codegen/c_codegen.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"
#include "cannl/support/hash.h"
#include "codegen/c/c_dialect.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/clike/file_layout.h"
#include "codegen/clike/identifiers.h"
#include "codegen/clike/index_range.h"
#include "codegen/clike/kernel_label.h"
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

constexpr unsigned kBoundaryEvery = 3;

// ---- which statements are kernels ----

// The local scalar scopes a statement declares and those it reads or writes.
struct ScopeUse {
  std::set<int> declared, used;
};

void scan(const ir::StmtRef& s, ScopeUse& u);

void scan(const ir::ScalarRef& s, ScopeUse& u) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ir::LocalScope>) {
          u.declared.insert(n.scope_id);
          scan(n.body, u);
        } else if constexpr (std::is_same_v<T, ir::GetLocal>) {
          u.used.insert(n.scope_id);
        } else if constexpr (std::is_same_v<T, ir::Apply>) {
          for (const auto& a : n.args) scan(a, u);
        } else if constexpr (std::is_same_v<T, ir::GetDynamic>) {
          scan(n.dyn_value, u);
        }
      },
      s->node);
}

void scan(const ir::StmtRef& s, ScopeUse& u) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ir::Seq>) {
          for (const auto& c : n.stmts) scan(c, u);
        } else if constexpr (std::is_same_v<T, ir::For> || std::is_same_v<T, ir::If>) {
          if constexpr (std::is_same_v<T, ir::If>) scan(n.condition, u);
          scan(n.body, u);
        } else if constexpr (std::is_same_v<T, ir::Set>) {
          scan(n.value, u);
        } else if constexpr (std::is_same_v<T, ir::SetDynamic>) {
          scan(n.dyn_value, u);
          scan(n.value, u);
        } else if constexpr (std::is_same_v<T, ir::SetLocal>) {
          u.used.insert(n.scope_id);
          scan(n.value, u);
        } else if constexpr (std::is_same_v<T, ir::DeclareLocal>) {
          u.declared.insert(n.scope_id);
        }
      },
      s->node);
}

// A loop nest or tile that uses no scalar local declared outside it: it can be a function.
bool is_kernel(const ir::StmtRef& s) {
  if (!std::holds_alternative<ir::For>(s->node) && !std::holds_alternative<ir::TileMma>(s->node)) return false;
  ScopeUse u;
  scan(s, u);
  for (int id : u.used)
    if (!u.declared.contains(id)) return false;
  return true;
}

// A statement the main unit prints in place that leaves an optimizer nothing to speed up: no
// loop or tile anywhere in it (a zeroing is a memset call, a scalar update a few operations).
// Without the optimizer the IEEE operations are the same (no fast-math, no contraction).
bool loop_free(const ir::StmtRef& s) {
  bool loops = false;
  ir::for_each_stmt(s, [&](const ir::Stmt& x) {
    loops = loops || std::holds_alternative<ir::For>(x.node) || std::holds_alternative<ir::TileMma>(x.node);
  });
  return !loops;
}

// ---- hot and cold kernels ----

// Kernels doing less than this many innermost iterations per call are cold: even at -O1 they
// take microseconds, nothing next to the routine's hot loops, and -O1 compiles several times
// faster than -O3 (no vectorizer, no unrolling, no loop versioning).
constexpr double kHotIterations = 65536;

double work(const ir::StmtRef& s);

double work(const ir::ScalarRef& s) {
  if (const auto* l = std::get_if<ir::LocalScope>(&s->node)) return work(l->body);
  double w = 0;
  if (const auto* a = std::get_if<ir::Apply>(&s->node))
    for (const auto& x : a->args) w += work(x);
  return w;
}

// Innermost iterations of a statement (a tile counts its multiply-adds).
double work(const ir::StmtRef& s) {
  return std::visit(
      [&](const auto& n) -> double {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ir::Seq>) {
          double w = 0;
          for (const auto& c : n.stmts) w += work(c);
          return w;
        } else if constexpr (std::is_same_v<T, ir::For>) {
          return static_cast<double>(n.end - n.begin) * work(n.body);
        } else if constexpr (std::is_same_v<T, ir::If>) {
          return work(n.body);
        } else if constexpr (std::is_same_v<T, ir::TileMma>) {
          return static_cast<double>(n.rows()) * static_cast<double>(n.cols()) * static_cast<double>(n.steps());
        } else if constexpr (std::is_same_v<T, ir::Set>) {
          return 1 + work(n.value);
        } else if constexpr (std::is_same_v<T, ir::SetDynamic> || std::is_same_v<T, ir::SetLocal>) {
          return 1 + work(n.value);
        } else {
          return 1;
        }
      },
      s->node);
}

// ---- printing ----

// One distinct kernel function.
struct KernelFunction {
  std::string name;         // cannl_k_<digest16>
  std::string definition;   // the function, without its prelude
  std::string declaration;  // its prototype, for the routine's unit
  std::string digest;
  bool hot = false;
};

// Kernel functions are global in their library only: never exported, never interposed.
constexpr const char* kHidden = "__attribute__((visibility(\"hidden\"))) ";

// The function of kernel `s` with positional names; `args` gets the call's arguments in the
// routine's names.
KernelFunction print_kernel(const CDialect& d, const ir::LoweredRoutine& routine, const ir::StmtRef& s,
                            const IdentifierTable& routine_names, const CodegenOptions& options,
                            std::vector<std::string>& args) {
  const std::vector<ir::NodeRef> nodes = ir::nodes_of(s);
  IdentifierTable names(d.reserved_words());
  names.assign_positional(nodes, routine.statics);
  std::vector<std::string> params;
  for (const auto& n : nodes) {
    params.push_back(d.pointer_param(d.storage_type(n->dtype), names.node(*n)));
    args.push_back(routine_names.node(*n));
  }
  for (const auto& st : routine.statics) {
    params.push_back(d.static_param(*names.static_symbol(st.symbol)));
    args.push_back(*routine_names.static_symbol(st.symbol));
  }
  BodyPrinter body(d, names, routine.statics, options);
  body.set_comments(false);
  const std::string text = body.print(s, 1);
  // The name is the digest of everything else, so equal kernels share one function.
  const std::string placeholder = "int cannl_k_(";
  const std::string tail = join_params(params, placeholder) + ") {\n  int cannl_status = CANNL_STATUS_OK;\n" +
                           text + "  return cannl_status;\n}\n";
  KernelFunction f;
  f.digest = sha256_hex(tail);
  f.name = "cannl_k_" + f.digest.substr(0, 16);
  f.hot = work(s) >= kHotIterations;
  const std::string head = "int " + f.name + "(";
  f.definition = "/* " + comment_safe(kernel_label(s, "", names, false)) + " */\n" + kHidden + head + tail;
  f.declaration = kHidden + head + join_params(params, head) + ");\n";
  return f;
}

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The file of one group of kernels: a header comment, the prelude they use, the functions.
std::string unit_text(const CDialect& d, const ir::LoweredRoutine& routine, const CodegenOptions& options,
                      const std::vector<const KernelFunction*>& group) {
  std::string code, list;
  for (const KernelFunction* f : group) {
    code += "\n" + f->definition;
    list += " *   " + f->name + "\n";
  }
  const std::string prelude = select_prelude(d.prelude_helpers(options.target), code, d.helper_prefix());
  return "/* Generated by cannl: kernels of routine " + comment_safe(routine.name) + " (" +
         (group.front()->hot ? "hot" : "cold") + "), called by its main file; kernels of equal text are\n" +
         " * one function, shared by all of its calls:\n" + list + " */\n\n" + d.prelude_header() +
         "\n" + prelude + code;
}

// Content-defined groups of `kernels` (see the file comment).
std::vector<std::vector<const KernelFunction*>> group_kernels(const std::vector<const KernelFunction*>& kernels,
                                                              std::size_t unit_lines) {
  std::vector<std::vector<const KernelFunction*>> groups;
  std::vector<const KernelFunction*> current;
  std::size_t lines = 0;
  for (const KernelFunction* f : kernels) {
    current.push_back(f);
    lines += count_lines(f->definition);
    const bool boundary = std::stoul(f->digest.substr(16, 8), nullptr, 16) % kBoundaryEvery == 0;
    if (lines >= 10 * unit_lines || (lines >= unit_lines && boundary)) {
      groups.push_back(std::move(current));
      current.clear();
      lines = 0;
    }
  }
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

}  // namespace

SplitSource emit_c_split(const ir::LoweredRoutine& routine, const std::vector<ir::NodeRef>& params,
                         const CodegenOptions& options, const SplitOptions& split) {
  internal_check(routine.body != nullptr, [&] { return "codegen: routine " + routine.name + " has no body"; });
  check_index_range(routine, options.target.index_dtype);
  const CDialect d;
  const std::vector<ir::NodeRef> locals = local_nodes(routine.body, params);
  std::vector<ir::NodeRef> all = params;
  all.insert(all.end(), locals.begin(), locals.end());
  IdentifierTable names(d.reserved_words());
  names.assign(all, routine.statics);
  const RoutineSignature sig = signature(d, routine, params, names);

  // The routine's body: kernels become calls, everything else is printed in place. Profiled, a
  // lap of the clock follows every statement that profiles count as a kernel (kernel_profile.cpp).
  SplitSource out;
  const bool profile = options.profile_kernels;
  std::map<std::string, KernelFunction> functions;
  std::vector<const KernelFunction*> order;  // first-call order
  BodyPrinter body(d, names, routine.statics, options);
  std::string body_text = profile ? "  int64_t cannl_profile_t = cannl_profile_now();\n" : "";
  std::vector<TimedKernel> timed;
  std::string section;
  bool plain = true;  // the main unit holds nothing but calls, zeroing and declarations
  for (const auto& s : ir::flatten_seq(routine.body)) {
    if (const auto* c = std::get_if<ir::Comment>(&s->node)) section = c->text;
    const bool lap = profile && !std::holds_alternative<ir::Comment>(s->node) &&
                     !std::holds_alternative<ir::DeclareLocal>(s->node) && !std::holds_alternative<ir::Barrier>(s->node);
    if (lap) timed.push_back({kernel_label(s, section, names), static_cast<std::int64_t>(count_lines(body_text))});
    if (!is_kernel(s) && !loop_free(s)) plain = false;
    if (is_kernel(s)) {
      std::vector<std::string> args;
      KernelFunction f = print_kernel(d, routine, s, names, options, args);
      auto [it, fresh] = functions.emplace(f.name, std::move(f));
      if (fresh) order.push_back(&it->second);
      std::string call;
      for (std::size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + args[k];
      body_text += "  /* " + comment_safe(kernel_label(s, "", names)) + " */\n  cannl_check(&cannl_status, " +
                   it->first + "(" + call + "));\n";
      ++out.kernels;
    } else {
      body_text += body.print(s, 1);
    }
    if (lap) body_text += "  cannl_profile_lap(" + std::to_string(timed.size() - 1) + ", &cannl_profile_t);\n";
  }
  out.unique_kernels = static_cast<int>(order.size());

  const std::string head = "static int " + sig.name + "(";
  const auto [decls, frees] = local_arrays(d, locals, names, routine.body);
  const std::string opening = head + join_params(sig.params, head) + ") {\n  int cannl_status = CANNL_STATUS_OK;\n" + decls;
  std::string declarations = "/* The kernels, defined in the routine's other files. */\n";
  for (const KernelFunction* f : order) declarations += f->declaration;
  const std::string trampoline = d.entry_trampoline(sig, out.routine.entry_symbol);
  const std::string rest = body_text + frees + "  return cannl_status;\n}\n\n" + trampoline;
  const std::string code = declarations + "\n" + opening + rest;
  const std::string prelude = select_prelude(d.prelude_helpers(options.target), code, d.helper_prefix());
  const std::string header = header_comment(routine, params, locals, names) + "\n";
  if (profile) {
    out.routine.profile_symbol = "cannl_profile_" + sig.name;
    out.routine.text = d.timed_file({header, d.prelude_header(), prelude + declarations + "\n", opening, rest}, timed,
                                    out.routine.profile_symbol);
  } else {
    out.routine.text = header + d.prelude_header() + "\n" + prelude + code;
  }
  const std::string stem = routine_identifier(d, routine.name);
  out.units.push_back({stem, out.routine.text, false, plain});

  // Cold kernels first, then hot ones: each group is compiled at one optimization level.
  std::vector<const KernelFunction*> cold, hot;
  for (const KernelFunction* f : order) (f->hot ? hot : cold).push_back(f);
  int part = 0;
  for (const auto* kernels : {&cold, &hot}) {
    for (const auto& group : group_kernels(*kernels, split.unit_lines)) {
      const std::string index = std::to_string(part++);
      out.units.push_back({stem + ".part" + std::string(index.size() < 2 ? "0" : "") + index,
                           unit_text(d, routine, options, group), group.front()->hot, false});
    }
  }
  return out;
}

}  // namespace cannl::codegen
