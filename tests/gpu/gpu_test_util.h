#pragma once
// The GPU backend the GPU tests (label `gpu`) run on: CANNL_TEST_GPU_BACKEND names it (opencl by
// default, which PoCL runs on the CPU in CI; cuda on a machine with an NVIDIA GPU). Every test
// skips with the reason when it does not open, so the suite passes on a machine without either.
//
//   auto gpu = gpu_test::backend();
//   if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "backends/run_util.h"
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

/// Whether the backend prints its kernels in a C dialect (cuda, cuda-cpu, hip, opencl). The
/// gpu-emulator's source is its launches as loop IR, which it interprets: tests reading how the
/// dialect renders something (a tree reduction's helpers, float4 loads, an MMA instruction)
/// check that text only where there is one, and the values everywhere.
inline bool prints_kernels() { return backend_name() != "gpu-emulator"; }

/// How the backend's source spells what some tests look for in it: the barrier, a vector loop,
/// and a load and a store of a float4 (OpenCL C, or the CUDA family: cuda, cuda-cpu, hip). The
/// gpu-emulator's loop IR has the barrier and the loop but no float4 (see prints_kernels): those
/// spellings are text it never holds, so that a check of them fails there rather than pass.
struct Spelling {
  std::string barrier, vector_loop, vector_load, vector_store;
};
inline Spelling spelling() {
  if (backend_name() == "opencl") return {"barrier(CLK_LOCAL_MEM_FENCE", "4 lanes", "vload4(0, &", "vstore4("};
  if (!prints_kernels()) return {" barrier\n", " vectorized:", "(no float4 in loop IR)", "(no float4 in loop IR)"};
  return {"__syncthreads()", "4 lanes", "*(const float4 *)&", "*(float4 *)&"};
}
inline const std::string& unavailable_reason() { return opened().reason; }

/// Runs `request` on the GPU and on the interpreter from the same inputs and expects the same
/// values (f32) in every parameter from `first_output` on; returns the GPU's source.
inline std::string expect_as_on_the_interpreter(backends::Backend& gpu, const backends::CompileRequest& request,
                                                const std::vector<test_util::Bytes>& inputs,
                                                std::size_t first_output) {
  const std::string source = gpu.compile(request)->source();
  const auto on_gpu = test_util::run_on(gpu, request, inputs);
  const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), request, inputs);
  for (std::size_t out = first_output; out < request.params.size(); ++out)
    EXPECT_EQ(test_util::values_of<float>(on_gpu[out]), test_util::values_of<float>(on_interp[out]))
        << request.params[out]->debug_name() << "\n" << source;
  return source;
}

}  // namespace cannl::gpu_test
