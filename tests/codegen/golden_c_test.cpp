// Golden generated-C snapshots (tests/golden/codegen/<case>.c) of a matmul, a convolution and a
// softmax under the default CPU schedule, rendered for 64-byte vectors and OpenMP Grid loops
// (fixed settings, so the text does not depend on the machine). Only the routine itself is
// compared (from its `static int` line on, assignment comments dropped), not the prelude helpers
// it uses. A change of the
// front end, the optimizer, the schedule or the printer fails here; when intended, regenerate and
// review the diff:
//
//   CANNL_TEST_UPDATE_GOLDEN=1 ./test_codegen --gtest_filter='GoldenC.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "codegen/golden_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

using testing::ramp;

// The routine from its `static int` line on, without the assignment comments (`/* d[i3] =:+ ...
// */`), which name process-global symbol ids.
std::string routine_text(const std::string& source) {
  const auto at = source.find("\nstatic int ");
  static const std::regex assignment_comment("\n *\\/\\*[^\n]*=:[^\n]*\\*\\/");
  return std::regex_replace(at == std::string::npos ? source : source.substr(at + 1), assignment_comment, "");
}

void check_golden(const std::string& name, const Tensor& out) {
  struct Overrides {
    Overrides() {
      config::set_override("cc_vector_bytes", "64");
      config::set_override("cc_parallel_grid", "openmp");
      config::set_override("cc_parallel_chunks", "0");
      config::set_override("cc_threads", "0");
      config::set_override("automatic_cpu_schedule", "true");
    }
    ~Overrides() { config::clear_overrides(); }
  } overrides;
  runtime::Context ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {out});
  const std::string got = routine_text(train::compile_forward(ctx, {out}, name).source());
  testing::expect_golden(name + ".c", got);
}

class GoldenC : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      (void)runtime::Context::cpu();
    } catch (const BackendUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

TEST_F(GoldenC, Matmul) {
  // y[b, o] = sum_i w[o, i] x[b, i]: 256 x 128 x 192.
  Tensor x = literal("x", ramp(256 * 192), {.batch = Dims{256}, .output = Dims{192}});
  Tensor w = literal("w", ramp(128 * 192), {.input = Dims{192}, .output = Dims{128}});
  check_golden("matmul", w * x);
}

TEST_F(GoldenC, Convolution) {
  // A valid 5x5 convolution, 3 -> 16 channels, over a batch of 8 32x32 images (LeNet-like).
  Tensor x = literal("img", ramp(8 * 32 * 32 * 3), {.batch = Dims{8}, .output = Dims{32, 32, 3}});
  Tensor k = literal("kernel", ramp(5 * 5 * 3 * 16), {.input = Dims{5, 5, 3}, .output = Dims{16}});
  check_golden("conv2d", conv2d(x, k));
}

TEST_F(GoldenC, Softmax) {
  Tensor x = literal("logits", ramp(512 * 1000), {.batch = Dims{512}, .output = Dims{1000}});
  check_golden("softmax", nn::softmax(x));
}

}  // namespace
}  // namespace cannl
