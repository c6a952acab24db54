// CUDA C++ (compiled by NVRTC): the CUDA-style spellings (cuda_style_dialect.h) with fixed-width
// integer typedefs of its own (NVRTC has no <stdint.h>).
#include "codegen/gpu/cuda_style_dialect.h"

namespace cannl::codegen {

class CudaDialect final : public CudaStyleDialect {
 public:
  std::string prelude_header() const override {
    return fixed_width_types() +
           "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
           "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n" +
           integer_limit_macros();
  }
};

const CLikePrinter& cuda_dialect() {
  static const CudaDialect dialect;
  return dialect;
}

}  // namespace cannl::codegen
