#pragma once
// The C files under src/codegen/c/kernels/, embedded as text at build time
// (cmake/cannl_embed.cmake): `cannl_sgemm_c` is kernels/cannl_sgemm.c.

namespace cannl::codegen::kernel_texts {

extern const char cannl_sgemm_c[];

}  // namespace cannl::codegen::kernel_texts
