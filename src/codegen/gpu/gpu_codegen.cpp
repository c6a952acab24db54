// emit_gpu: the module printer with the dialect of the requested language.
#include "cannl/codegen/gpu_codegen.h"

namespace cannl::codegen {

// Defined with their dialects (cuda_dialect.cpp, opencl_dialect.cpp).
const CLikePrinter& cuda_dialect();
const CLikePrinter& opencl_dialect();

std::string_view gpu_language_name(GpuLanguage language) {
  return language == GpuLanguage::Cuda ? "CUDA" : "OpenCL";
}

GeneratedModule emit_gpu(GpuLanguage language, const ir::LoweredRoutine& routine,
                         const std::vector<KernelBody>& kernels, const CodegenOptions& options) {
  const CLikePrinter& dialect = language == GpuLanguage::Cuda ? cuda_dialect() : opencl_dialect();
  return dialect.print_kernels(routine, kernels, options);
}

}  // namespace cannl::codegen
