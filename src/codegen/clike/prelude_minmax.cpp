// Prelude helpers: selects with both arms evaluated, and max and min as IEEE 754-2019 maximumNumber / minimumNumber (a NaN operand
// loses, +0 is above -0), the interpreter's definition (src/interp/scalar_ops.cpp). C's fmaxf
// leaves the sign of fmaxf(-0, +0) to the implementation, and GCC returns either depending on
// the surrounding code, so the generated code never calls fmax / fmin.
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

std::string minmax_text(const std::string& name, const std::string& type, bool max) {
  const std::string above = max ? " > " : " < ";
  return "/* Branch-free (a data-dependent branch mispredicts on pooling windows): a when it is\n"
         "   beyond b, when b is NaN, or when they are equal and a's sign bit says so. */\n"
         "$P " + type + " " + name + "(" + type + " a, " + type + " b) {\n"
         "  const int take_a = (a" + above + "b) | (b != b) | ((a == b) & (" + (max ? "signbit(a) == 0" : "signbit(a) != 0") + "));\n"
         "  return take_a ? a : b;\n"
         "}\n";
}

// c ? a : b with both arms already evaluated, so the compiler can turn it into a blend rather
// than a branch (relu gradients and `where` on random data mispredict half the time). The arms
// are side-effect free, in-bounds reads and float arithmetic, so evaluating both changes nothing.
std::string select_text(const std::string& name, const std::string& type) {
  return "$P " + type + " " + name + "(int c, " + type + " a, " + type + " b) { return c ? a : b; }\n";
}

}  // namespace

void append_minmax_helpers(std::vector<PreludeHelper>& out) {
  out.push_back({"cannl_fmaxf", minmax_text("cannl_fmaxf", "float", true), {}});
  out.push_back({"cannl_fminf", minmax_text("cannl_fminf", "float", false), {}});
  out.push_back({"cannl_fmax", minmax_text("cannl_fmax", "double", true), {}});
  out.push_back({"cannl_fmin", minmax_text("cannl_fmin", "double", false), {}});
  out.push_back({"cannl_selectf", select_text("cannl_selectf", "float"), {}});
  out.push_back({"cannl_select", select_text("cannl_select", "double"), {}});
}

}  // namespace cannl::codegen
