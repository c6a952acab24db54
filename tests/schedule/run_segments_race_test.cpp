// run_segments (gpu_test_util.h) race-checks the kernels it runs in the interpreter's order: a
// race fails the test that runs them.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "schedule/gpu_test_util.h"

namespace cannl::schedule::testing {
namespace {

using ir::AxisType;
using ir::DType;

// for g Grid: x[g, j] = a[g, j] (Workgroup j); y[g, k] = x[g, 7 - k] (Workgroup k), with no
// final lowering round to put a barrier between them; fission makes it one kernel.
void run_unordered_siblings() {
  const auto a = ir::make_node("a", DType::F32, {2, 8}), x = ir::make_node("x", DType::F32, {2, 8});
  const auto y = ir::make_node("y", DType::F32, {2, 8});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex mirrored{{{-1, k}}, 7};
  const auto body = ir::seq(
      {ir::for_loop(j, 0, 8, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup),
       ir::for_loop(k, 0, 8, ir::set(y, {it(g), it(k)}, ir::get(x, {it(g), mirrored})), AxisType::Workgroup)});
  const ir::LoweredRoutine r{"siblings", ir::for_loop(g, 0, 2, body, AxisType::Grid), {}};
  run_segments(r, fission(r, gpu_test_target()));
}

TEST(RunSegments, FailsTheTestOfAKernelWithARace) {
  EXPECT_NONFATAL_FAILURE(run_unordered_siblings(), "race on x element 7");
}

}  // namespace
}  // namespace cannl::schedule::testing
