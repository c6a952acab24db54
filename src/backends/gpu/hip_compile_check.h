#pragma once
// Config key `hip_compile_check`: the OpenCL backend also prints every module it compiles as HIP,
// once per named AMD architecture with that architecture's wave size, into a folder; a later
// step compiles the folder with hiprtc, so that CI, which has Debian's ROCm packages but no AMD
// GPU, checks every HIP kernel the tests generate (wave64 and wave32 block reductions included).
//
// Two steps because hiprtc cannot run beside PoCL, which the OpenCL tests use: ROCm's comgr,
// which hiprtc loads, carries its own copy of clang, and LLVM aborts a process that registers
// its options twice (PoCL's libclang-cpp and comgr's).
//
//   write_hip_check_modules(routine, kernels, target);      // in the OpenCL process
//   compile_hip_check_modules(hip_check_dir()).modules     // in one of its own

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cannl/codegen/clike_printer.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::backends::gpu {

/// The wave size HIP compiles for on `arch`: 32 on RDNA (gfx10xx, gfx11xx, gfx12xx), else 64.
int hip_wave_size(const std::string& arch);

/// The folder the modules go to: build_files/<exe>/hip_compile_check/.
std::filesystem::path hip_check_dir();

/// With `hip_compile_check` set (comma-separated architectures): prints `kernels` of `routine` as
/// HIP for each architecture and writes it to hip_check_dir() as `<arch>-<digest>.hip` (a text
/// already there is not written again). Does nothing when the key is empty.
void write_hip_check_modules(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                             const ir::Target& target);

struct HipCompileChecks {
  std::int64_t modules = 0;  // module texts compiled (one per distinct text and architecture)
  std::int64_t kernels = 0;  // their kernels
  double seconds = 0;        // spent in hiprtc
  std::vector<std::string> architectures;
};

/// Compiles every `<arch>-<digest>.hip` in `dir` with hiprtc for its architecture, in name
/// order, and removes each one that compiled (so that a folder holds only what is left to check).
/// Modules are compiled 64 to a program, each in a namespace of its own with its kernels' C
/// linkage dropped (their names repeat across modules); a rejected batch is compiled again one
/// module at a time. Throws CompileError naming the module's file (which stays) with hiprtc's
/// log, BackendUnavailable without hiprtc or when this process already holds another clang
/// (libclang-cpp).
/// With `only_arch` set, only that architecture's modules (CTest runs one process per
/// architecture, in parallel).
HipCompileChecks compile_hip_check_modules(const std::filesystem::path& dir, const std::string& only_arch = "");

}  // namespace cannl::backends::gpu
