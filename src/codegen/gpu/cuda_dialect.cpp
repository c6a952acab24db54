// CUDA C++ (compiled by NVRTC): the CUDA-style spellings (cuda_style_dialect.h) with fixed-width
// integer typedefs of its own (NVRTC has no <stdint.h>), and tensor-core tiles by inline PTX
// (mma_helpers.h), pipelined staging by cp.async (async_copy_helpers.h) and warp shuffles in
// block reductions.
#include <cstdio>

#include "codegen/gpu/async_copy_helpers.h"
#include "codegen/gpu/cuda_style_dialect.h"
#include "codegen/gpu/mma_helpers.h"

namespace cannl::codegen {

class CudaDialect final : public CudaStyleDialect {
 public:
  std::string prelude_header() const override {
    return fixed_width_types() +
           "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
           "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n" +
           integer_limit_macros();
  }
  // The mask names exactly the lanes that reach the shuffle (a whole warp, or a block of fewer
  // threads): naming an inactive lane is undefined behaviour on Volta and later.
  std::string shuffle_down(const std::string& value, const std::string& delta, int lanes) const override {
    // A CUDA warp is 32 lanes: a wider "wave" (CUDA text printed for a wave-64 target) would
    // shuffle past the warp, so its reduction stays in shared memory.
    if (lanes > 32) return "";
    char mask[16];
    const unsigned bits = lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
    std::snprintf(mask, sizeof mask, "0x%08xu", bits);
    return "__shfl_down_sync(" + std::string(mask) + ", " + value + ", (unsigned int)" + delta + ")";
  }
  std::set<std::string> reserved_words() const override {
    auto words = CudaStyleDialect::reserved_words();
    for (const char* w : {"__shfl_sync", "__shfl_up_sync", "__shfl_xor_sync"}) words.insert(w);
    return words;
  }
  bool spells_warp_mma() const override { return true; }
  bool spells_async_copy() const override { return true; }
  void append_prelude_helpers(std::vector<PreludeHelper>& out, const ir::Target&) const override {
    append_cuda_mma_helpers(out);
    append_cuda_async_copy_helpers(out);
  }
  std::string aligned_shared_array(const std::string& type, const std::string& ident,
                                   std::int64_t elements) const override {
    return "__shared__ __align__(16) " + type + " " + ident + "[" + std::to_string(elements) + "];";
  }
};

const CLikePrinter& cuda_dialect() {
  static const CudaDialect dialect;
  return dialect;
}

}  // namespace cannl::codegen
