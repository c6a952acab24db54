// Prelude helpers: negation by the sign bit, selects with both arms evaluated, and max and min as IEEE 754-2019
// maximumNumber / minimumNumber (a NaN operand loses, +0 is above -0), the interpreter's definition (src/interp/scalar_ops.cpp). C's fmaxf
// leaves the sign of fmaxf(-0, +0) to the implementation, and GCC returns either depending on
// the surrounding code, so the generated code never calls fmax / fmin.
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

// The helpers work on the bits: comparisons give 0 or 1, a mask selects one operand's bits.
// Without branches and without C conditionals, the compiler needs no if-conversion (which the
// cc backend turns off on GCC <= 12, see toolchain.cpp) to pipeline or vectorize them; a
// branch on random data (pooling, relu gradients) mispredicts half the time (LeNet's max pool:
// benchmarks/reports/schedule-decisions.md).
std::string bits_type(const std::string& type) { return type == "float" ? "int32_t" : "int64_t"; }
// The dialect's bit casts (CLikePrinter::append_bitcast_helpers).
std::string tag(const std::string& type) { return type == "float" ? "f32" : "f64"; }
std::string bits_of(const std::string& type) { return "cannl_bits_of_" + tag(type); }
std::string of_bits(const std::string& type) { return "cannl_" + tag(type) + "_of_bits"; }

// -x by flipping the sign bit, as the interpreter's -x does (NaN included). A C minus is not
// enough: GCC 12 folds -fma(a, b, c) into one fnmsub instruction, -(a*b) - c, which rounds a
// sum that cancels to +0 where the negation of fma's +0 is -0 (ops.def, Neg). The compiler
// keeps the flip as an xor after the fma, scalar or vectorized.
std::string neg_text(const std::string& name, const std::string& type) {
  const std::string bits = bits_type(type);
  const std::string sign = type == "float" ? "(-2147483647 - 1)" : "(-9223372036854775807LL - 1)";
  return "$P " + type + " " + name + "(" + type + " x) {\n"
         "  return " + of_bits(type) + "(" + bits_of(type) + "(x) ^ (" + bits + ")" + sign + ");\n}\n";
}

std::string select_text(const std::string& name, const std::string& type) {
  const std::string bits = bits_type(type);
  return "/* c ? a : b, both arms evaluated (side-effect free), by a bit mask. */\n"
         "$P " + type + " " + name + "(int c, " + type + " a, " + type + " b) {\n"
         "  const " + bits + " ia = " + bits_of(type) + "(a), ib = " + bits_of(type) + "(b);\n"
         "  const " + bits + " m = -(" + bits + ")(c != 0);\n"
         "  return " + of_bits(type) + "((ia & m) | (ib & ~m));\n}\n";
}

// maximumNumber / minimumNumber: a when it is beyond b, when b is NaN, or when they are equal
// and a's sign bit says so (+0 above -0); else b.
std::string minmax_text(const std::string& name, const std::string& type, bool max) {
  const std::string above = max ? " > " : " < ";
  const std::string bits = bits_type(type);
  const std::string select = type == "float" ? "cannl_selectf" : "cannl_select";
  return "$P " + type + " " + name + "(" + type + " a, " + type + " b) {\n"
         "  const " + bits + " ia = " + bits_of(type) + "(a);\n"
         "  const int take_a = (a" + above + "b) | (b != b) | ((a == b) & (ia " + (max ? ">= 0" : "< 0") + "));\n"
         "  return " + select + "(take_a, a, b);\n"
         "}\n";
}

}  // namespace

void append_minmax_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_negf", neg_text("cannl_negf", "float"), {"cannl_bits_of_f32", "cannl_f32_of_bits"}});
  out.push_back({"cannl_neg", neg_text("cannl_neg", "double"), {"cannl_bits_of_f64", "cannl_f64_of_bits"}});
  out.push_back({"cannl_selectf", select_text("cannl_selectf", "float"), {"cannl_bits_of_f32", "cannl_f32_of_bits"}});
  out.push_back({"cannl_select", select_text("cannl_select", "double"), {"cannl_bits_of_f64", "cannl_f64_of_bits"}});
  out.push_back({"cannl_fmaxf", minmax_text("cannl_fmaxf", "float", true), {"cannl_selectf", "cannl_bits_of_f32"}});
  out.push_back({"cannl_fminf", minmax_text("cannl_fminf", "float", false), {"cannl_selectf", "cannl_bits_of_f32"}});
  out.push_back({"cannl_fmax", minmax_text("cannl_fmax", "double", true), {"cannl_select", "cannl_bits_of_f64"}});
  out.push_back({"cannl_fmin", minmax_text("cannl_fmin", "double", false), {"cannl_select", "cannl_bits_of_f64"}});
}

}  // namespace cannl::codegen
