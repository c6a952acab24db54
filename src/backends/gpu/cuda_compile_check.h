#pragma once
// Config key `cuda_compile_check`: the OpenCL backend also prints every module it compiles as CUDA
// and compiles it with NVRTC for the named architecture, so that CI, which has the CUDA toolkit
// but no GPU, checks every CUDA kernel the tests generate. The counts are for the test report.
//
//   check_cuda_compiles(routine, kernels, target);   // CompileError naming the kernel's module
//   cuda_compile_checks().modules                     // how many modules NVRTC compiled

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/codegen/clike_printer.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::backends::gpu {

struct CudaCompileChecks {
  std::int64_t modules = 0;
  std::int64_t kernels = 0;
  std::string unavailable;  // why NVRTC could not be loaded (nothing was checked); "" otherwise
};

/// With `cuda_compile_check` set: prints `kernels` of `routine` as CUDA, as a device of that
/// architecture runs them (from sm_80 on, with gpu_async_copy=auto, the blocked tiles' staging
/// pipelined by cp.async where the two stages fit `target`'s device), and compiles them with
/// NVRTC for that architecture, and for sm_80 too where a tile runs on tensor cores (throws
/// CompileError with NVRTC's log on a rejection; a real architecture runs ptxas, which checks
/// the inline PTX). Does nothing when the key is empty; without NVRTC it warns once and checks
/// nothing.
void check_cuda_compiles(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                         const ir::Target& target);

/// The CUDA form of `kernels` of `routine` (lowered for `target`) that a device of `arch` runs:
/// warps of 32 lanes (block reductions end in warp shuffles); from sm_80 on, with
/// gpu_async_copy=auto, the blocked tiles' staging pipelined by cp.async where the two stages
/// fit `target`'s device (ir::pipelined_blocking), which the OpenCL target never asks for; else
/// the routine as it is.
///   cuda_form(r, kernels, opencl_target, "sm_90").target.gpu_async_copy == true
struct CudaForm {
  ir::LoweredRoutine routine;
  std::vector<codegen::KernelBody> kernels;
  ir::Target target;
};
CudaForm cuda_form(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                   const ir::Target& target, const std::string& arch);

/// With `cuda_compile_check` set and `cuda` a copy of the OpenCL target with the tensor-core
/// formats that architecture renders (gpu_mma_formats): lowers `scheduled` (the routine before
/// the final lowering round) for `cuda` and, where some matmul tile then runs on tensor cores
/// (which the OpenCL target never asks for), compiles that form too (check_cuda_compiles): the
/// CUDA kernels a bf16, f16 or tf32 policy gets on a GPU.
void check_cuda_tensor_core_compiles(const ir::LoweredRoutine& scheduled, const ir::Target& cuda);

/// What check_cuda_compiles compiled in this process.
CudaCompileChecks cuda_compile_checks();

}  // namespace cannl::backends::gpu
