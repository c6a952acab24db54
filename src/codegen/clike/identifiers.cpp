// Identifier assignment for generated C (see identifiers.h).
#include "codegen/clike/identifiers.h"

#include <cctype>
#include <map>

#include "cannl/support/error.h"

namespace cannl::codegen {

std::string sanitize_identifier(std::string_view label) {
  std::string out;
  for (char ch : label) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
    const char c = ok ? ch : '_';
    // Collapsed underscores keep names free of the reserved `__` pattern.
    if (c == '_' && !out.empty() && out.back() == '_') continue;
    out.push_back(c);
  }
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0])) != 0) out = "t_" + out;
  if (out.size() > 1 && out[0] == '_' && std::isupper(static_cast<unsigned char>(out[1])) != 0) {
    out = "t" + out;  // `_X...` is reserved to the implementation
  }
  return out;
}

namespace {

// The object-like macros of the headers a generated file includes or defines itself (<stdint.h>'s
// limits, which the GPU preludes define where the compiler lacks the header; <math.h>'s and
// <stdlib.h>'s constants): a parameter named INT32_MAX would be replaced by its value.
void add_header_macros(std::set<std::string>& words) {
  for (const char* width : {"8", "16", "32", "64"}) {
    for (const char* kind : {"", "_LEAST", "_FAST"}) {
      const std::string w = std::string(kind) + width;
      for (const std::string& name : {"INT" + w + "_MIN", "INT" + w + "_MAX", "UINT" + w + "_MAX"}) words.insert(name);
    }
  }
  for (const char* name : {"INTPTR_MIN", "INTPTR_MAX", "UINTPTR_MAX", "INTMAX_MIN", "INTMAX_MAX", "UINTMAX_MAX",
                           "PTRDIFF_MIN", "PTRDIFF_MAX", "SIZE_MAX", "SIG_ATOMIC_MIN", "SIG_ATOMIC_MAX", "WCHAR_MIN",
                           "WCHAR_MAX", "WINT_MIN", "WINT_MAX", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "FP_NAN",
                           "FP_INFINITE", "FP_ZERO", "FP_SUBNORMAL", "FP_NORMAL", "FP_ILOGB0", "FP_ILOGBNAN",
                           "MATH_ERRNO", "MATH_ERREXCEPT", "math_errhandling", "EXIT_SUCCESS", "EXIT_FAILURE",
                           "RAND_MAX", "MB_CUR_MAX"}) {
    words.insert(name);
  }
}

// The functions, function-like macros and types those headers declare (C11: <math.h>, <stdint.h>,
// <stdlib.h>, <string.h>, and <time.h> for profiled files; -std=c11 hides glibc's extensions): a
// routine or node named `exit` or `strlen` would redeclare one ("conflicting types for 'exit'").
void add_header_declarations(std::set<std::string>& words) {
  for (const char* f : {"acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
                        "sinh", "tanh", "exp", "exp2", "expm1", "frexp", "ilogb", "ldexp", "log", "log10",
                        "log1p", "log2", "logb", "modf", "scalbn", "scalbln", "cbrt", "fabs", "hypot", "pow",
                        "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor", "nearbyint", "rint", "lrint",
                        "llrint", "round", "lround", "llround", "trunc", "fmod", "remainder", "remquo",
                        "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma"}) {
    for (const char* suffix : {"", "f", "l"}) words.insert(std::string(f) + suffix);
  }
  for (const char* name :
       {// <math.h>'s classification and comparison macros and types
        "fpclassify", "isfinite", "isinf", "isnan", "isnormal", "signbit", "isgreater", "isgreaterequal", "isless",
        "islessequal", "islessgreater", "isunordered", "float_t", "double_t",
        // <stdlib.h>
        "atof", "atoi", "atol", "atoll", "strtod", "strtof", "strtold", "strtol", "strtoll", "strtoul", "strtoull",
        "rand", "srand", "aligned_alloc", "calloc", "free", "malloc", "realloc", "abort", "atexit",
        "at_quick_exit", "exit", "_Exit", "getenv", "quick_exit", "system", "bsearch", "qsort", "abs", "labs",
        "llabs", "div", "ldiv", "lldiv", "mblen", "mbtowc", "wctomb", "mbstowcs", "wcstombs", "div_t", "ldiv_t",
        "lldiv_t", "wchar_t", "size_t",
        // <string.h>
        "memcpy", "memmove", "strcpy", "strncpy", "strcat", "strncat", "memcmp", "strcmp", "strcoll", "strncmp",
        "strxfrm", "memchr", "strchr", "strcspn", "strpbrk", "strrchr", "strspn", "strstr", "strtok", "memset",
        "strerror", "strlen",
        // <stdint.h>'s types and constant macros
        "intptr_t", "uintptr_t", "intmax_t", "uintmax_t", "INTMAX_C", "UINTMAX_C",
        // <time.h>
        "clock", "time", "difftime", "mktime", "strftime", "asctime", "ctime", "gmtime", "localtime",
        "timespec_get", "clock_t", "time_t", "tm", "timespec", "CLOCKS_PER_SEC", "TIME_UTC"}) {
    words.insert(name);
  }
  for (const char* width : {"8", "16", "32", "64"}) {
    for (const char* kind : {"", "_least", "_fast"}) {
      words.insert(std::string("int") + kind + width + "_t");
      words.insert(std::string("uint") + kind + width + "_t");
    }
    words.insert(std::string("INT") + width + "_C");
    words.insert(std::string("UINT") + width + "_C");
  }
}

}  // namespace

std::set<std::string> c_reserved_words() {
  std::set<std::string> words{
      // C11/C23 keywords and common macros
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "NULL",
      "INFINITY", "NAN", "alignas", "alignof", "static_assert", "thread_local", "nullptr",
      // keywords of the C++-based dialects (CUDA, Metal, HIP)
      "class", "new", "delete", "this", "template", "namespace", "private", "public", "using",
      "operator", "virtual", "half", "kernel", "device", "constant", "thread", "threadgroup",
      // libm / libc names the generated code or the prelude may call
      "exp", "expf", "log", "logf", "exp2", "exp2f", "log2", "log2f", "sin", "sinf", "cos",
      "cosf", "sqrt", "sqrtf", "tanh", "tanhf", "trunc", "truncf", "fmin", "fminf", "fmax",
      "fmaxf", "fma", "fmaf", "fmod", "fmodf", "pow", "powf", "fabs", "fabsf", "floor", "ceil",
      "round", "ldexp", "ldexpf", "memset", "memcpy", "malloc", "calloc", "free", "abs", "main",
      // fixed-width types
      "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
      "size_t", "buffers", "statics"};
  add_header_macros(words);
  add_header_declarations(words);
  return words;
}

bool IdentifierTable::is_reserved(const std::string& name) const {
  if (reserved_.count(name) != 0) return true;
  // Prelude helpers; their names never end in '_', so the suffixed name is free.
  if (name.rfind("cannl_", 0) == 0 && name.back() != '_') return true;
  // Generated locals: loop indices i<k>, scalar locals v<k> and dynamic rows r<k>.
  if (name.size() >= 2 && (name[0] == 'i' || name[0] == 'v' || name[0] == 'r')) {
    bool digits = true;
    for (std::size_t k = 1; k < name.size(); ++k) {
      digits = digits && std::isdigit(static_cast<unsigned char>(name[k])) != 0;
    }
    if (digits) return true;
  }
  return false;
}

std::string IdentifierTable::unique(std::string base) {
  // Terminates: a name ending in '_' is never reserved, and `used_` is finite.
  while (is_reserved(base) || used_.count(base) != 0) base += "_";
  used_.insert(base);
  return base;
}

void IdentifierTable::assign(const std::vector<ir::NodeRef>& nodes,
                             const std::vector<ir::StaticSymbol>& statics) {
  std::vector<std::string> bases;
  std::map<std::string, int> counts;
  for (const auto& n : nodes) {
    std::string base = sanitize_identifier(n->label);
    if (base.empty()) base = "n" + std::to_string(n->id);
    bases.push_back(base);
    ++counts[base];
  }
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    std::string base = bases[k];
    if (counts[base] > 1) base += "_n" + std::to_string(nodes[k]->id);
    nodes_[nodes[k]->id] = unique(base);
  }
  for (std::size_t k = 0; k < statics.size(); ++k) {
    std::string base = sanitize_identifier(statics[k].name);
    if (base.empty()) base = "static" + std::to_string(k);
    statics_[statics[k].symbol.id] = unique(base);
  }
}

void IdentifierTable::assign_positional(const std::vector<ir::NodeRef>& nodes,
                                        const std::vector<ir::StaticSymbol>& statics) {
  for (std::size_t k = 0; k < nodes.size(); ++k) nodes_[nodes[k]->id] = unique("b" + std::to_string(k));
  for (std::size_t k = 0; k < statics.size(); ++k) statics_[statics[k].symbol.id] = unique("s" + std::to_string(k));
}

const std::string& IdentifierTable::node(const ir::TensorNode& node) const {
  auto it = nodes_.find(node.id);
  internal_check(it != nodes_.end(), [&] { return "codegen: node " + node.debug_name() + " has no identifier"; });
  return it->second;
}

const std::string* IdentifierTable::static_symbol(ir::Symbol symbol) const {
  auto it = statics_.find(symbol.id);
  return it == statics_.end() ? nullptr : &it->second;
}

}  // namespace cannl::codegen
