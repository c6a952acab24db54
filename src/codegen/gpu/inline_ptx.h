#pragma once
// CUDA helpers written in inline PTX (mma_helpers.h, async_copy_helpers.h) are device code only:
// NVRTC, which defines __CUDA_ARCH__, compiles them; a host compiler skips them, and the
// cuda-cpu test device (backends/gpu/cuda_on_cpu_shim.h) stands in for them with its own.
//
//   device_only("$P void f(void) { asm volatile(\"...\"); }\n")

#include <string>

namespace cannl::codegen {

inline std::string device_only(const std::string& text) {
  return "#ifdef __CUDA_ARCH__ /* inline PTX: device compilation only */\n" + text + "#endif\n";
}

}  // namespace cannl::codegen
