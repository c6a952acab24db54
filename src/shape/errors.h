#pragma once
// Building ShapeError messages: what failed, in which operation, the shapes involved (printed
// B|I->O) and, for einsum specs, a caret under the offending axis label.

#include <string>

#include "shape/state.h"

namespace cannl::shape {

/// Throws ShapeError "<what> in operation '<op>'..." listing the origin's shapes; `at` (if it
/// carries a position in this origin's spec) puts a caret under that axis label.
[[noreturn]] void shape_fail(const Origin* origin, const std::string& what, const Dim* at = nullptr,
                             const Dim* at2 = nullptr, int spec_pos = -1);

}  // namespace cannl::shape
