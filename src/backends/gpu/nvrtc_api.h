#pragma once
// NVRTC, CUDA's run-time compiler (libnvrtc.so.*), loaded at run time: CUDA C++ source to PTX
// and, for a real architecture, to a cubin. It needs no driver and no GPU, so a machine with only
// the toolkit can check that generated kernels compile.
//
//   NvrtcOutput out = nvrtc_compile_program(source, nvrtc_options("sm_90"), "add.cu");
//   out.ptx   // ".version 9.0\n.target sm_90 ..."

#include <string>
#include <vector>

namespace cannl::backends::gpu {

struct NvrtcOutput {
  std::string ptx;
  /// Machine code for the architecture; empty when NVRTC cannot give one (a virtual
  /// architecture, or an NVRTC without nvrtcGetCUBIN).
  std::string cubin;
  /// NVRTC's messages (warnings) for a successful compile.
  std::string log;
};

/// The options cannl compiles every kernel with, for `arch` ("sm_90"): IEEE arithmetic as the
/// interpreter computes it (no fast math, no contraction of a * b + c into fma: the printer
/// writes fma where the IR has one), C++17, line info for profilers.
std::vector<std::string> nvrtc_options(const std::string& arch);

/// Compiles `source` with `options`; `program_name` names it in NVRTC's messages. Throws
/// BackendUnavailable when libnvrtc cannot be loaded (naming every name tried), CompileError
/// carrying NVRTC's log (and the options) when the source does not compile.
NvrtcOutput nvrtc_compile_program(const std::string& source, const std::vector<std::string>& options,
                                  const std::string& program_name = "cannl.cu");

/// NVRTC's version, "13.0"; throws BackendUnavailable like nvrtc_compile_program.
std::string nvrtc_version();

/// How many sources NVRTC compiled in this process (successfully or not), for reports such as
/// "the suite compiled 412 CUDA kernels for sm_90".
int nvrtc_compilations();

/// The names tried for libnvrtc, in order (see cuda_toolkit_candidates).
std::vector<std::string> nvrtc_candidates();

}  // namespace cannl::backends::gpu
