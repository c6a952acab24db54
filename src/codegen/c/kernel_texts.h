#pragma once
// The C files under src/codegen/c/kernels/, embedded as text at build time
// (cmake/cannl_embed.cmake): `cannl_sgemm_c` is kernels/cannl_sgemm.c, `cannl_own_math_c` is
// src/ir/own_math.c (cannl's own exp and tanh, which the interpreter compiles too).

namespace cannl::codegen::kernel_texts {

extern const char cannl_sgemm_c[];
extern const char cannl_own_math_c[];

}  // namespace cannl::codegen::kernel_texts
