#pragma once
// What CUDA C++ (NVRTC) and HIP (hiprtc, hipcc) spell alike: `extern "C" __global__` kernels with
// launch bounds, `__device__` helpers, `__restrict__` pointers, blockIdx / threadIdx, the
// __float_as_int family of bit casts, __syncthreads and `__shared__` arrays. A dialect of this
// family adds its header (the integer types its compiler lacks) and its own reserved words.

#include "codegen/gpu/gpu_dialect.h"

namespace cannl::codegen {

class CudaStyleDialect : public GpuDialect {
 public:
  std::string function_prefix() const override { return "extern \"C\" __global__"; }
  std::string helper_prefix() const override { return "static __device__ inline"; }
  std::string pointer_param(const std::string& type, const std::string& ident) const override {
    return type + " *__restrict__ " + ident;
  }
  std::set<std::string> reserved_words() const override;
  std::string kernel_head(const std::string& name, const ir::KernelGeometry& g) const override {
    return function_prefix() + " void __launch_bounds__(" + std::to_string(g.threads_per_block()) + ") " + name;
  }
  std::string block_index(int slot) const override;
  std::string thread_index(int slot) const override;
  std::string f32_bits_fn() const override { return "__float_as_int"; }
  std::string bits_f32_fn() const override { return "__int_as_float"; }
  std::string f64_bits_fn() const override { return "__double_as_longlong"; }
  std::string bits_f64_fn() const override { return "__longlong_as_double"; }
  std::string barrier() const override { return "__syncthreads();"; }
  std::string shared_array(const std::string& type, const std::string& ident, std::int64_t elements) const override {
    return "__shared__ " + type + " " + ident + "[" + std::to_string(elements) + "];";
  }
  std::string vector_load(const std::string& vtype, int, const std::string& element) const override {
    return "*(const " + vtype + " *)&" + element;
  }
  std::string vector_store(const std::string& vtype, int, const std::string& element,
                           const std::string& value) const override {
    return "*(" + vtype + " *)&" + element + " = " + value + ";";
  }
  std::string vector_constructor(const std::string& vtype) const override { return "make_" + vtype; }

 protected:
  /// The typedefs of <stdint.h>, for compilers without it (NVRTC, hiprtc).
  static std::string fixed_width_types();
};

}  // namespace cannl::codegen
