#pragma once
// cannl's own f32 exp and tanh (src/ir/own_math.c): a fixed sequence of f32 operations without
// libm, which the interpreter evaluates here and the C backend prints into its scalar and vector
// code, so all three compute the same bits (and GELU and softmax vectorize). At most 1.013 ulp
// (exp) and 1.330 ulp (tanh) from the exact result, over every f32 (glibc: 0.50 and 2.19).
//
//   float y = ir::own_expf(x);   // the bits of the generated C's cannl_expf(x)

namespace cannl::ir {

/// e^x: 0 below -104, +inf above 89 (as rounding gives), NaN for NaN.
float own_expf(float x);
/// tanh(x): odd, ±1 beyond |x| = 9.01, NaN for NaN.
float own_tanhf(float x);

}  // namespace cannl::ir
