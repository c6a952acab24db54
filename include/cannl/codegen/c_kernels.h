#pragma once
// The kernel libraries that generated C calls but does not define: the packed, register-tiled f32
// matmul of each vector width (src/codegen/c/kernels/cannl_sgemm.c, embedded in cannl at build
// time so an installed cannl needs no source tree). A backend compiles each once per flags and
// links it with the routines whose source names it (their prelude declares its functions).
//
//   auto lib = codegen::sgemm_kernel_library(64);   // lib.name == "cannl_sgemm_x16"
//   if (routine_text.find(lib.name) != std::string::npos) ... compile lib.text, link it

#include <string>

#include "cannl/ir/target.h"

namespace cannl::codegen {

/// One kernel library's C source.
struct KernelLibrarySource {
  std::string name;  // the library's file stem and its exported function: "cannl_sgemm_x16"
  std::string text;  // the configuration macros of the width and blocking, then the kernel file
};

/// The f32 matmul kernel library for `vector_bytes`-byte vectors (16, 32 or 64; InternalError
/// otherwise) with the register tile and cache blocks `shape` (a target record's `gemm`; the
/// default: ir::cpu_target(vector_bytes).gemm).
KernelLibrarySource sgemm_kernel_library(int vector_bytes, const ir::GemmShape& shape = {});

}  // namespace cannl::codegen
