#pragma once
// hiprtc, HIP's run-time compiler (libhiprtc.so.*; inside libamdhip64 up to ROCm 5.2), loaded at
// run time: HIP source to a code object (an AMDGPU ELF) for one architecture. It needs no GPU
// and no driver, so a machine with the ROCm packages alone can check that generated kernels
// compile, for any architecture.
//
//   HiprtcOutput out = hiprtc_compile_program(source, hiprtc_options("gfx90a"), "add.hip");
//   out.code   // "\x7f" "ELF..." for gfx90a

#include <string>
#include <vector>

namespace cannl::backends::gpu {

struct HiprtcOutput {
  /// The code object (hipModuleLoadData loads it).
  std::string code;
  /// hiprtc's messages (warnings) for a successful compile.
  std::string log;
};

/// The options cannl compiles every HIP kernel with, for `arch` ("gfx90a", "gfx1030"): IEEE
/// arithmetic as the interpreter computes it (no contraction of a * b + c into fma, which clang's
/// HIP default allows: the printer writes fma where the IR has one), C++17, -O3.
std::vector<std::string> hiprtc_options(const std::string& arch);

/// Compiles `source` with `options`; `program_name` names it in hiprtc's messages. Throws
/// BackendUnavailable when hiprtc cannot be loaded (naming every name tried) or cannot run in
/// this process (it already holds PoCL's libclang-cpp, whose LLVM options ROCm's comgr would
/// register again: LLVM aborts the process then; the same holds for loading PoCL after a HIP
/// compile), CompileError carrying hiprtc's log (and the options) when the source does not compile.
HiprtcOutput hiprtc_compile_program(const std::string& source, const std::vector<std::string>& options,
                                    const std::string& program_name = "cannl.hip");

/// hiprtc's version as it reports it ("9.0" for ROCm 5.2's); throws like hiprtc_compile_program.
std::string hiprtc_version();
/// The library hiprtc was loaded from ("libamdhip64.so.5"); throws like hiprtc_compile_program.
std::string hiprtc_library();

/// How many sources hiprtc compiled in this process (successfully or not).
int hiprtc_compilations();

/// The names tried for hiprtc, in order: libhiprtc.so.6, .so.5, .so, then the HIP runtime's
/// (which held hiprtc up to ROCm 5.2), each also under the ROCm folders (rocm_candidates).
std::vector<std::string> hiprtc_candidates();

}  // namespace cannl::backends::gpu
