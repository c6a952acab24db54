// The C-family printer: file layout (header comment, prelude, routine, trampoline) and the
// default (C) spellings of the dialect hooks.
#include "cannl/codegen/clike_printer.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "cannl/support/error.h"
#include "codegen/clike/body_printer.h"
#include "codegen/clike/expr_text.h"
#include "codegen/clike/file_layout.h"
#include "codegen/clike/identifiers.h"
#include "codegen/clike/index_range.h"
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

using ir::DType;

// Function-local arrays above this size live on the heap (stack frames stay small).
constexpr std::size_t kMaxStackArrayBytes = 16384;

std::string CLikePrinter::pointer_param(const std::string& type, const std::string& ident) const {
  return type + " *" + ident;
}

std::string CLikePrinter::shared_pointer_param(const std::string& type, const std::string& ident) const {
  return type + " *" + ident;
}

std::string CLikePrinter::static_param(const std::string& ident) const {
  return "const int64_t " + ident;
}

std::string CLikePrinter::value_type(DType t) const {
  switch (t) {
    case DType::F64: return "double";
    case DType::F32: case DType::F16: case DType::BF16: case DType::FP8: return "float";
    case DType::I32: return "int32_t";
    case DType::I64: return "int64_t";
    case DType::U32: return "uint32_t";
    case DType::U64: return "uint64_t";
    case DType::U8: return "uint8_t";
    case DType::U4x32: return "cannl_u4x32";
  }
  throw InternalError("codegen: unknown dtype");
}

std::string CLikePrinter::storage_type(DType t) const {
  if (t == DType::F16 || t == DType::BF16) return "uint16_t";
  if (t == DType::FP8) return "uint8_t";
  return value_type(t);
}

std::string CLikePrinter::libm_suffix(DType compute) const {
  return compute == DType::F64 ? "" : "f";
}

std::string CLikePrinter::own_function(ir::Op, DType) const { return ""; }

std::string CLikePrinter::prelude_header() const {
  return "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n";
}

std::string CLikePrinter::entry_trampoline(const RoutineSignature&, std::string& entry_symbol) const {
  entry_symbol.clear();
  return "";
}

std::set<std::string> CLikePrinter::reserved_words() const { return c_reserved_words(); }

void CLikePrinter::append_bitcast_helpers(std::vector<PreludeHelper>& out) const {
  // memcpy is the defined way to reinterpret bits in C; compilers turn it into a register move.
  for (const auto& [tag, f, i] : {std::tuple{"f32", "float", "int32_t"}, {"f64", "double", "int64_t"}}) {
    const std::string bits_of = std::string("cannl_bits_of_") + tag, of_bits = std::string("cannl_") + tag + "_of_bits";
    out.push_back({bits_of, std::string("$P ") + i + " " + bits_of + "(" + f + " x) { " + i +
                                " b; memcpy(&b, &x, sizeof b); return b; }\n", {}});
    out.push_back({of_bits, std::string("$P ") + f + " " + of_bits + "(" + i + " b) { " + f +
                                " x; memcpy(&x, &b, sizeof x); return x; }\n", {}});
  }
}

std::string CLikePrinter::zero_out(const std::string& ident, std::int64_t, std::size_t bytes) const {
  return "memset(" + ident + ", 0, " + std::to_string(bytes) + ");";
}

std::string describe_node(const ir::TensorNode& n, const IdentifierTable& names) {
  std::string dims = "[";
  for (std::size_t k = 0; k < n.dims.size(); ++k) dims += (k ? ", " : "") + std::to_string(n.dims[k]);
  return " *   " + names.node(n) + ": node n" + std::to_string(n.id) + " \"" + comment_safe(n.label) + "\", " +
         std::string(ir::dtype_name(n.dtype)) + ", dims " + dims + "]\n";
}

std::string join_params(const std::vector<std::string>& params, const std::string& head) {
  std::string one_line;
  for (std::size_t k = 0; k < params.size(); ++k) one_line += (k ? ", " : "") + params[k];
  if (head.size() + one_line.size() < 100) return one_line;
  std::string out;
  for (std::size_t k = 0; k < params.size(); ++k) out += (k ? ",\n    " : "\n    ") + params[k];
  return out;
}

std::string routine_identifier(const CLikePrinter& d, const std::string& routine_name) {
  std::string name = sanitize_identifier(routine_name);
  if (name.empty()) name = "routine";
  // A routine named like a C keyword or a libm / prelude function (`exp`, `int`) gets a suffix.
  if (d.reserved_words().count(name) != 0) name += "_routine";
  return name;
}

std::vector<PreludeHelper> CLikePrinter::prelude_helpers(const ir::Target& target) const {
  // Dependencies come before their users: the bit casts first, the dialect's own helpers last.
  std::vector<PreludeHelper> helpers;
  append_bitcast_helpers(helpers);
  for (auto& h : c_prelude_helpers()) helpers.push_back(std::move(h));
  append_prelude_helpers(helpers, target);
  return helpers;
}

namespace {

[[noreturn]] void cannot_spell(const std::string& what) {
  throw InternalError("codegen: this dialect cannot render " + what +
                      "; the target record should have kept the schedule from asking for it");
}

}  // namespace

void CLikePrinter::append_prelude_helpers(std::vector<PreludeHelper>&, const ir::Target&) const {}
void CLikePrinter::print_grid(BodyPrinter&, const ir::For&, const std::string&) const { cannot_spell("a Grid loop"); }
void CLikePrinter::print_workgroup(BodyPrinter&, const ir::For&, const std::string&) const {
  cannot_spell("a Workgroup loop");
}
void CLikePrinter::print_vectorized(BodyPrinter&, const ir::For&, const std::string&) const {
  cannot_spell("a Vectorized loop");
}
void CLikePrinter::print_tile(BodyPrinter&, const ir::TileMma&) const { cannot_spell("a matmul tile"); }
std::string CLikePrinter::vector_type(ir::DType, int) const { cannot_spell("a vector type"); }
std::string CLikePrinter::shared_array(const std::string&, const std::string&, std::int64_t) const {
  cannot_spell("workgroup-shared memory");
}
std::string CLikePrinter::kernel_head(const std::string&, const ir::KernelGeometry&) const {
  cannot_spell("a kernel function");
}
std::string CLikePrinter::timed_body(BodyPrinter&, const ir::StmtRef&, const IdentifierTable&,
                                     std::vector<TimedKernel>&) const {
  cannot_spell("kernel timing");
}
std::string CLikePrinter::timed_file(const FileParts&, const std::vector<TimedKernel>&, const std::string&) const {
  cannot_spell("kernel timing");
}

std::string header_comment(const ir::LoweredRoutine& r, const std::vector<ir::NodeRef>& params,
                           const std::vector<ir::NodeRef>& locals, const IdentifierTable& names) {
  std::ostringstream s;
  s << "/* Generated by cannl: routine " << comment_safe(r.name) << ".\n";
  auto describe = [&](const ir::NodeRef& n) { s << describe_node(*n, names); };
  s << " * Parameters, in order:\n";
  for (const auto& n : params) describe(n);
  if (!locals.empty()) s << " * Local arrays:\n";
  for (const auto& n : locals) describe(n);
  if (!r.statics.empty()) s << " * Static indices, in order:\n";
  for (const auto& st : r.statics) {
    s << " *   " << *names.static_symbol(st.symbol) << ": range " << st.range << "\n";
  }
  s << " */\n";
  return s.str();
}


std::vector<ir::NodeRef> local_nodes(const ir::StmtRef& body, const std::vector<ir::NodeRef>& params) {
  std::vector<ir::NodeRef> locals;
  for (const auto& n : ir::nodes_of(body)) {
    auto same = [&](const ir::NodeRef& p) { return p->id == n->id; };
    if (std::none_of(params.begin(), params.end(), same)) locals.push_back(n);
  }
  return locals;
}

namespace {

// Locals whose first touch in the routine zeroes the whole node (a ZeroOut, or a tile that starts
// at zero): their declaration needs no memset (a staged partials node of megabytes is zeroed once, not twice per call).
std::set<int> zeroed_before_use(const ir::StmtRef& body) {
  std::set<int> zeroed, touched;
  for (const auto& s : ir::flatten_seq(body)) {
    // A ZeroOut, or a tile starting at zero (its output zeroed, then every cell written).
    const auto* z = std::get_if<ir::ZeroOut>(&s->node);
    const auto* t = std::get_if<ir::TileMma>(&s->node);
    const ir::NodeRef zeroed_node = z ? z->node : t && t->zero_start ? t->d.node : nullptr;
    if (zeroed_node && !touched.contains(zeroed_node->id)) zeroed.insert(zeroed_node->id);
    if (z) {
      touched.insert(z->node->id);
      continue;
    }
    for (const auto& n : ir::nodes_of(s)) touched.insert(n->id);
  }
  return zeroed;
}

}  // namespace

LocalArrays local_arrays(const CLikePrinter& d, const std::vector<ir::NodeRef>& locals, const IdentifierTable& names,
                         const ir::StmtRef& body) {
  std::string stack, heap, checks, zeroing, frees;
  const std::set<int> zeroed_first = zeroed_before_use(body);
  for (const auto& n : locals) {
    const std::string type = d.storage_type(n->dtype);
    const std::string& id = names.node(*n);
    if (n->size_in_bytes() <= kMaxStackArrayBytes) {
      // 64-byte aligned like the context's buffers, so vector code may assume either.
      stack += "  _Alignas(64) " + type + " " + id + "[" + std::to_string(n->num_elements()) + "];\n  memset(" +
               id + ", 0, sizeof " + id + ");\n";
      continue;
    }
    const std::string bytes = std::to_string((n->size_in_bytes() + 63) / 64 * 64);
    // Declared like a parameter (restrict in C): a local allocation is reached through this
    // pointer only, and without the promise the compiler keeps loops over locals scalar.
    heap += "  " + d.pointer_param(type, id) + " = (" + type + " *)aligned_alloc(64, " + bytes + ");\n";
    checks += std::string(checks.empty() ? "" : " || ") + id + " == NULL";
    zeroing += zeroed_first.contains(n->id) ? "  /* " + id + " zeroed by its first statement */\n"
                                            : "  memset(" + id + ", 0, " + bytes + ");\n";
    frees += "  free(" + id + ");\n";
  }
  if (heap.empty()) return {stack, ""};
  const std::string check = "  if (" + checks + ") {\n    cannl_status = CANNL_STATUS_OUT_OF_MEMORY;\n    goto cannl_done;\n  }\n";
  return {stack + heap + check + zeroing, "cannl_done:\n" + frees};
}

RoutineSignature signature(const CLikePrinter& d, const ir::LoweredRoutine& routine,
                           const std::vector<ir::NodeRef>& params, const IdentifierTable& names) {
  RoutineSignature sig;
  sig.name = routine_identifier(d, routine.name);
  for (const auto& n : params) {
    sig.pointer_types.push_back(d.storage_type(n->dtype));
    sig.params.push_back(d.pointer_param(d.storage_type(n->dtype), names.node(*n)));
  }
  for (const auto& st : routine.statics) sig.params.push_back(d.static_param(*names.static_symbol(st.symbol)));
  sig.num_statics = routine.statics.size();
  return sig;
}


GeneratedSource CLikePrinter::print(const ir::LoweredRoutine& routine,
                                    const std::vector<ir::NodeRef>& params,
                                    const CodegenOptions& options) const {
  internal_check(routine.body != nullptr, [&] { return "codegen: routine " + routine.name + " has no body"; });
  check_index_range(routine, options.target.index_dtype);
  const std::vector<ir::NodeRef> locals = local_nodes(routine.body, params);
  std::vector<ir::NodeRef> all = params;
  all.insert(all.end(), locals.begin(), locals.end());
  IdentifierTable names(reserved_words());
  names.assign(all, routine.statics);

  const RoutineSignature sig = signature(*this, routine, params, names);
  // Routines of dialects with a status (C) return CANNL_STATUS_OK or the first failure's code.
  const bool status_kept = returns_status();
  const std::string prefix = function_prefix().empty() ? "" : function_prefix() + " ";
  const std::string head = prefix + (status_kept ? "int " : "void ") + sig.name + "(";
  const auto [decls, frees] = local_arrays(*this, locals, names, routine.body);
  const std::string status = status_kept ? "  int cannl_status = CANNL_STATUS_OK;\n" : "";
  BodyPrinter body(*this, names, routine.statics, options);
  std::vector<TimedKernel> kernels;
  const std::string body_text = options.profile_kernels ? timed_body(body, routine.body, names, kernels)
                                                        : body.print(routine.body, 1);
  const std::string opening = head + join_params(sig.params, head) + ") {\n" + status + decls;
  internal_check(status_kept || frees.empty(), "codegen: heap locals in a dialect without a status");
  const std::string ending = frees + (status_kept ? "  return cannl_status;\n}\n" : "}\n");
  const std::string fn = opening + body_text + ending;

  GeneratedSource out;
  const std::string trampoline = entry_trampoline(sig, out.entry_symbol);
  const std::string code = fn + (trampoline.empty() ? "" : "\n" + trampoline);
  std::vector<PreludeHelper> helpers = prelude_helpers(options.target);
  const std::string prelude = select_prelude(helpers, code, helper_prefix());
  const std::string header = header_comment(routine, params, locals, names) + "\n";
  if (!options.profile_kernels) {
    out.text = header + prelude_header() + "\n" + prelude + code;
    return out;
  }
  out.profile_symbol = "cannl_profile_" + sig.name;
  const std::string rest = body_text + ending + (trampoline.empty() ? "" : "\n" + trampoline);
  out.text = timed_file({header, prelude_header(), prelude, opening, rest}, kernels, out.profile_symbol);
  return out;
}

}  // namespace cannl::codegen
