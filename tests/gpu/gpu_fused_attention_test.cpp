// nn::fused_attention on the GPU backend (OpenCL on PoCL in CI) under the default GPU schedule
// with fission: its forward, delta, dq and dk/dv nests become kernels whose outer loops (query or
// key rows) are the threads, and the values equal the interpreter's to rounding (the device's
// exp and log may differ from cannl's own by an ulp or two).
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "nn/attention_test_util.h"

namespace cannl {
namespace {

using testing_util::AttentionCase;
using testing_util::attention_run;
using testing_util::relative_error;

TEST(GpuFusedAttention, MatchesTheInterpreter) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const AttentionCase& c : {AttentionCase{.batch = 2, .seq = 9, .heads = 2, .d = 5, .e = 3, .causal = true},
                                 AttentionCase{.batch = 1, .seq = 6, .heads = 2, .d = 8, .e = 4, .causal = false}}) {
    const auto on_gpu = attention_run(runtime::Context(gpu), c, true);
    const auto on_interpreter = attention_run(runtime::Context::interpreter(), c, true);
    EXPECT_LT(relative_error(on_gpu.out, on_interpreter.out), 1e-6) << describe(c) << ": out";
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_LT(relative_error(on_gpu.grads[i], on_interpreter.grads[i]), 1e-6)
          << describe(c) << ": gradient of " << "qkv"[i];
  }
}

}  // namespace
}  // namespace cannl
