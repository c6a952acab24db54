#pragma once
// Config key `hip_compile_check`: the OpenCL backend also prints every module it compiles as HIP,
// once per named AMD architecture with that architecture's wave size, and compiles it with
// hiprtc, so that CI, which has Debian's ROCm packages but no AMD GPU, checks every HIP kernel
// the tests generate (wave64 and wave32 block reductions included). A module text met before
// for an architecture is not compiled again. The counts are for the test report.
//
//   check_hip_compiles(routine, kernels, target);   // CompileError naming the kernel's module
//   hip_compile_checks().modules                     // how many modules hiprtc compiled

#include <cstdint>
#include <string>
#include <vector>

#include "cannl/codegen/clike_printer.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"

namespace cannl::backends::gpu {

struct HipCompileChecks {
  std::int64_t modules = 0;     // module compiles (one per distinct text and architecture)
  std::int64_t kernels = 0;     // their kernels
  std::int64_t duplicates = 0;  // module texts met again for an architecture, not recompiled
  double seconds = 0;           // spent in hiprtc
  std::string unavailable;      // why hiprtc could not be loaded (nothing was checked); "" otherwise
};

/// The wave size HIP compiles for on `arch`: 32 on RDNA (gfx10xx, gfx11xx, gfx12xx), else 64.
int hip_wave_size(const std::string& arch);

/// With `hip_compile_check` set: prints `kernels` of `routine` as HIP for each architecture it
/// names and compiles them with hiprtc (throws CompileError with hiprtc's log on a rejection).
/// Does nothing when the key is empty; without hiprtc it warns once and checks nothing.
void check_hip_compiles(const ir::LoweredRoutine& routine, const std::vector<codegen::KernelBody>& kernels,
                        const ir::Target& target);

/// What check_hip_compiles compiled in this process.
HipCompileChecks hip_compile_checks();

}  // namespace cannl::backends::gpu
