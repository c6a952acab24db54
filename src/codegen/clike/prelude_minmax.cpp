// Prelude helpers: selects with both arms evaluated, and max and min as IEEE 754-2019 maximumNumber / minimumNumber (a NaN operand
// loses, +0 is above -0), the interpreter's definition (src/interp/scalar_ops.cpp). C's fmaxf
// leaves the sign of fmaxf(-0, +0) to the implementation, and GCC returns either depending on
// the surrounding code, so the generated code never calls fmax / fmin.
#include "codegen/clike/prelude.h"

namespace cannl::codegen {

namespace {

std::string minmax_text(const std::string& name, const std::string& type, bool max) {
  // Branches, not a blend: pooling accumulates max in a loop-carried chain, and the blend's
  // longer latency measured 2x slower there (LeNet's 2x2 max pool, 0.49 -> 0.93 ms).
  const std::string above = max ? " > " : " < ";
  return "$P " + type + " " + name + "(" + type + " a, " + type + " b) {\n"
         "  if (a" + above + "b || b != b) return a;\n"
         "  if (b" + above + "a || a != a) return b;\n"
         "  return signbit(a) ? " + (max ? "b : a" : "a : b") + ";\n"
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
