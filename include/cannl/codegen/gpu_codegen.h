#pragma once
// GPU code generation: one module (CUDA C++ for NVRTC, HIP for hiprtc, or OpenCL C 1.2) per fissioned routine,
// one kernel function per launch, over the one C-family printer (the dialects are thin hooks).
// Kernels compute the bits the interpreter and the C backend compute: the same prelude
// (threefry, narrow-float codecs, maximumNumber / minimumNumber), no contraction of a*b+c (fma
// only where the IR says Fma), IEEE division and square root.
//
//   auto m = codegen::emit_gpu(codegen::GpuLanguage::Cuda, routine, {{body, geometry}});
//   // m.text holds `extern "C" __global__ void __launch_bounds__(256) step_k0(float *__restrict__ a, ...)`
//   // m.kernels[0].params: the nodes to pass, in order, before the routine's statics

#include <string_view>
#include <vector>

#include "cannl/codegen/clike_printer.h"

namespace cannl::codegen {

enum class GpuLanguage { Cuda, Hip, OpenCL };
std::string_view gpu_language_name(GpuLanguage language);

/// The module of `kernels` (statements of `routine`, already lowered for the target and
/// fissioned), in launch order, named `<routine>_k<index>`. HIP block reductions follow the wave
/// size of `options.target.gpu.warp_size` (64 on CDNA, 32 on RDNA).
GeneratedModule emit_gpu(GpuLanguage language, const ir::LoweredRoutine& routine,
                         const std::vector<KernelBody>& kernels, const CodegenOptions& options = {});

}  // namespace cannl::codegen
