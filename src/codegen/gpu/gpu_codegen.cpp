// emit_gpu: the module printer with the dialect of the requested language.
#include "cannl/codegen/gpu_codegen.h"

namespace cannl::codegen {

// Defined with their dialects (cuda_dialect.cpp, hip_dialect.cpp, opencl_dialect.cpp).
const CLikePrinter& cuda_dialect();
const CLikePrinter& hip_dialect();
const CLikePrinter& opencl_dialect();

std::string_view gpu_language_name(GpuLanguage language) {
  switch (language) {
    case GpuLanguage::Cuda: return "CUDA";
    case GpuLanguage::Hip: return "HIP";
    case GpuLanguage::OpenCL: return "OpenCL";
  }
  return "?";
}

namespace {

const CLikePrinter& dialect_of(GpuLanguage language) {
  switch (language) {
    case GpuLanguage::Cuda: return cuda_dialect();
    case GpuLanguage::Hip: return hip_dialect();
    case GpuLanguage::OpenCL: return opencl_dialect();
  }
  return cuda_dialect();
}

}  // namespace

GeneratedModule emit_gpu(GpuLanguage language, const ir::LoweredRoutine& routine,
                         const std::vector<KernelBody>& kernels, const CodegenOptions& options) {
  return dialect_of(language).print_kernels(routine, kernels, options);
}

}  // namespace cannl::codegen
