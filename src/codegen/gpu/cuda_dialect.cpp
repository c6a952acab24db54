// CUDA C++ (compiled by NVRTC): `extern "C" __global__` kernels with launch bounds, `__device__`
// helpers, `__restrict__` pointers, fixed-width integer typedefs (NVRTC has no <stdint.h>).
#include "codegen/gpu/gpu_dialect.h"

namespace cannl::codegen {

namespace {

const char* const kSlots[3] = {"x", "y", "z"};

}  // namespace

class CudaDialect final : public GpuDialect {
 public:
  std::string function_prefix() const override { return "extern \"C\" __global__"; }
  std::string helper_prefix() const override { return "static __device__ inline"; }
  std::string pointer_param(const std::string& type, const std::string& ident) const override {
    return type + " *__restrict__ " + ident;
  }
  std::string prelude_header() const override {
    return "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\ntypedef short int16_t;\n"
           "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n"
           "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n"
           "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
           "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n" +
           integer_limit_macros();
  }
  std::set<std::string> reserved_words() const override {
    auto words = CLikePrinter::reserved_words();
    for (const char* w : {"blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "__syncthreads", "half",
                          "float2", "float4", "int2", "int4", "dim3", "min", "max", "signed", "unsigned"}) {
      words.insert(w);
    }
    return words;
  }
  std::string kernel_head(const std::string& name, const ir::KernelGeometry& g) const override {
    return function_prefix() + " void __launch_bounds__(" + std::to_string(g.threads_per_block()) + ") " + name;
  }
  std::string block_index(int slot) const override { return std::string("blockIdx.") + kSlots[slot]; }
  std::string thread_index(int slot) const override { return std::string("threadIdx.") + kSlots[slot]; }
  std::string f32_bits_fn() const override { return "__float_as_int"; }
  std::string bits_f32_fn() const override { return "__int_as_float"; }
  std::string f64_bits_fn() const override { return "__double_as_longlong"; }
  std::string bits_f64_fn() const override { return "__longlong_as_double"; }
  std::string barrier() const override { return "__syncthreads();"; }
  std::string shared_array(const std::string& type, const std::string& ident, std::int64_t elements) const override {
    return "__shared__ " + type + " " + ident + "[" + std::to_string(elements) + "];";
  }
};

const CLikePrinter& cuda_dialect() {
  static const CudaDialect dialect;
  return dialect;
}

}  // namespace cannl::codegen
