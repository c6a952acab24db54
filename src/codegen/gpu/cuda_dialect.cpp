// CUDA C++ (compiled by NVRTC): the CUDA-style spellings (cuda_style_dialect.h) with fixed-width
// integer typedefs of its own (NVRTC has no <stdint.h>), and tensor-core tiles by inline PTX
// (mma_helpers.h) and pipelined staging by cp.async (async_copy_helpers.h).
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
