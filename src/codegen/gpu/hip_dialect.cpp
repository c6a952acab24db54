// HIP (compiled by hiprtc at run time, or offline by hipcc): the CUDA-style spellings
// (cuda_style_dialect.h), one source for both compilers, and wave shuffles in block reductions.
//  * hiprtc (`__HIPCC_RTC__`) has no <stdint.h>: the module brings its typedefs; hipcc compiles
//    the same text with the HIP runtime header, which brings the C library's.
//  * Narrow floats are stored as bits (uint16_t, uint8_t) and converted through float by the
//    shared prelude's codecs, never by HIP's own conversions: every backend computes the same bits.
//  * `__shfl_down` moves a value within a wave of the target's `warp_size` lanes (64 on CDNA,
//    32 on RDNA): the block reduction combines its last log2(wave) steps in registers.
#include "codegen/gpu/cuda_style_dialect.h"

namespace cannl::codegen {

class HipDialect final : public CudaStyleDialect {
 public:
  std::string prelude_header() const override {
    return "#ifdef __HIPCC_RTC__\n" + fixed_width_types() +
           "#else\n#include <hip/hip_runtime.h>\n#include <stdint.h>\n#endif\n"
           "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
           "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n" +
           integer_limit_macros();
  }
  std::set<std::string> reserved_words() const override {
    auto words = CudaStyleDialect::reserved_words();
    for (const char* w : {"__shfl", "__shfl_up", "__shfl_xor", "__hip_bfloat16", "__half"}) words.insert(w);
    return words;
  }
  // No mask: a HIP shuffle reads whichever lanes are active, and the reduction combines only
  // the values of lanes that are.
  std::string shuffle_down(const std::string& value, const std::string& delta, int /*lanes*/) const override {
    return "__shfl_down(" + value + ", (unsigned int)" + delta + ")";
  }
};

const CLikePrinter& hip_dialect() {
  static const HipDialect dialect;
  return dialect;
}

}  // namespace cannl::codegen
