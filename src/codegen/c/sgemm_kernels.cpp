// The f32 matmul kernel library's source for one width (see cannl/codegen/c_kernels.h).
#include "cannl/codegen/c_kernels.h"

#include "codegen/c/kernel_texts.h"
#include "codegen/c/simd.h"

namespace cannl::codegen {

KernelLibrarySource sgemm_kernel_library(int vector_bytes, const ir::GemmShape& shape) {
  const SimdWidth w = simd_width(vector_bytes);
  const ir::GemmShape g = shape.mr > 0 ? shape : ir::cpu_target(vector_bytes).gemm;
  // The narrow tile (C at most one vector wide, a convolution with few output channels) has one
  // accumulator column and the same cells, so a 6-column tile wastes 10 of 16 lanes rather
  // than 26 of 32. The 4- and 8-row kernels take the common remainders of 9- to 12-row panels
  // in place instead of through a padded copy.
  const bool edge_kernels = g.mr > 8 && g.mr <= 12;
  std::string text = "/* " + gemm_function(w) + ": src/codegen/c/kernels/cannl_sgemm.c configured for " +
                     std::to_string(w.bytes) + "-byte vectors. */\n";
  auto define = [&](const std::string& macro, int value) {
    text += "#define " + macro + " " + std::to_string(value) + "\n";
  };
  define("CANNL_VECTOR_BYTES", w.bytes);
  define("CANNL_MR", g.mr);
  define("CANNL_NV", g.nv);
  define("CANNL_KC", g.kc);
  define("CANNL_NC", g.nc);
  define("CANNL_MC", g.mc);
  define("CANNL_NARROW_MR", g.mr * g.nv);
  define("CANNL_EDGE_KERNELS", edge_kernels ? 1 : 0);
  return {gemm_function(w), text + "\n" + kernel_texts::cannl_sgemm_c};
}

}  // namespace cannl::codegen
