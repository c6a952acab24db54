#pragma once
// The GPU backend the GPU tests (label `gpu`) run on: CANNL_TEST_GPU_BACKEND names it (opencl by
// default, which PoCL runs on the CPU in CI; cuda on a machine with an NVIDIA GPU). Every test
// skips with the reason when it does not open, so the suite passes on a machine without either.
//
//   auto gpu = gpu_test::backend();
//   if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();

#include <cstdlib>
#include <memory>
#include <string>

#include "cannl/backends/backend.h"
#include "cannl/support/error.h"

namespace cannl::gpu_test {

inline std::string backend_name() {
  const char* env = std::getenv("CANNL_TEST_GPU_BACKEND");
  return env != nullptr && *env != '\0' ? env : "opencl";
}

struct Opened {
  std::shared_ptr<backends::Backend> backend;
  std::string reason;
};

/// Opened once per test process (devices are expensive to open; their module caches are shared).
inline const Opened& opened() {
  static const Opened o = [] {
    Opened out;
    try {
      out.backend = backends::make_backend(backend_name());
    } catch (const BackendUnavailable& e) {
      out.reason = "no " + backend_name() + " backend here: " + e.what();
    }
    return out;
  }();
  return o;
}

inline std::shared_ptr<backends::Backend> backend() { return opened().backend; }

/// How the backend's dialect spells what some tests look for in the generated source: the
/// barrier, and a load and a store of a float4 (OpenCL C, or the CUDA family: cuda, cuda-cpu, hip).
struct Spelling {
  std::string barrier, vector_load, vector_store;
};
inline Spelling spelling() {
  if (backend_name() == "opencl") return {"barrier(CLK_LOCAL_MEM_FENCE", "vload4(0, &", "vstore4("};
  return {"__syncthreads()", "*(const float4 *)&", "*(float4 *)&"};
}
inline const std::string& unavailable_reason() { return opened().reason; }

}  // namespace cannl::gpu_test
