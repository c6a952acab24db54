// Golden GPU sources (tests/golden/codegen/<case>.cu and .cl) of a matmul and a softmax: the
// optimized routine under the default GPU schedule for a CUDA-like device (1024 threads per
// block, blocks of 256), the final lowering round and fission, printed by both GPU dialects. Only
// the kernels are compared (from the first kernel on, assignment comments dropped), not the
// header or the prelude. A change of the schedule, fission or the dialects fails here; when
// intended, regenerate and review the diff:
//
//   CANNL_TEST_UPDATE_GOLDEN=1 ./test_codegen --gtest_filter='GoldenGpu.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cannl/cannl.h"
#include "cannl/codegen/gpu_codegen.h"
#include "cannl/schedule/default_gpu.h"
#include "cannl/schedule/fission.h"
#include "cannl/schedule/lower_for_target.h"
#include "codegen/golden_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

using testing::ramp;

// The kernels of a module, without the assignment comments (they name process-global symbols).
std::string kernels_text(const std::string& source, const std::string& first_kernel) {
  const auto at = source.find(first_kernel);
  static const std::regex assignment_comment("\n *\\/\\*[^\n]*=:[^\n]*\\*\\/");
  return std::regex_replace(at == std::string::npos ? source : source.substr(at), assignment_comment, "");
}

void check_golden(const std::string& name, const Tensor& out) {
  runtime::Context ctx = runtime::Context::interpreter();
  train::upload_literals(ctx, {out});
  const ir::LoweredRoutine optimized = ctx.optimized_routine(forward_code({out}), name);
  const ir::Target target = ir::generic_gpu_target({1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 49152, 32});
  const ir::LoweredRoutine scheduled =
      schedule::lower_for_target(schedule::default_gpu_schedule(optimized, {.target = target}), target);
  std::vector<codegen::KernelBody> kernels;
  for (const auto& s : schedule::fission(scheduled, target)) {
    if (s.kind == schedule::Segment::Kind::Kernel) kernels.push_back({s.body, s.geometry});
  }
  for (const auto& [language, extension, head] :
       {std::tuple{codegen::GpuLanguage::Cuda, ".cu", "extern \"C\" __global__"},
        std::tuple{codegen::GpuLanguage::OpenCL, ".cl", "__kernel __attribute__"}}) {
    const std::string got = kernels_text(codegen::emit_gpu(language, scheduled, kernels, {.target = target}).text, head);
    testing::expect_golden(name + extension, got);
  }
}

TEST(GoldenGpu, Matmul) {
  // y[b, o] = sum_i w[o, i] x[b, i]: 256 x 128 x 192.
  Tensor x = literal("x", ramp(256 * 192), {.batch = Dims{256}, .output = Dims{192}});
  Tensor w = literal("w", ramp(128 * 192), {.input = Dims{192}, .output = Dims{128}});
  check_golden("gpu_matmul", w * x);
}

TEST(GoldenGpu, Softmax) {
  Tensor x = literal("logits", ramp(512 * 1000), {.batch = Dims{512}, .output = Dims{1000}});
  check_golden("gpu_softmax", nn::softmax(x));
}

}  // namespace
}  // namespace cannl
