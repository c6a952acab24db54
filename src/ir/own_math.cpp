// cannl's own f32 exp and tanh for the host (see cannl/ir/own_math.h): the C text the generated
// code's prelude embeds, compiled as C++ (the project builds with -ffp-contract=off, like the
// generated C by default).
#include "cannl/ir/own_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace cannl::ir {

namespace {

using std::fmaf;
using std::int32_t;
using std::memcpy;
using std::uint32_t;

#include "ir/own_math.c"

}  // namespace

float own_expf(float x) { return cannl_expf(x); }
float own_tanhf(float x) { return cannl_tanhf(x); }

}  // namespace cannl::ir
