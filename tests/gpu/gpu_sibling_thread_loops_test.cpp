// Sibling thread loops in one block: a Grid loop whose body holds two Workgroup loops, the second
// reading what other threads of the first wrote, and the same under a serial loop, whose next
// iteration reads what the last one wrote, and a sum outside the thread loops that the block
// must run once, not once per thread. A GPU runs a block's threads concurrently, so the final
// lowering round puts barriers between them and the sum on the first thread
// (schedule/lower_for_target.cpp), also under an If every thread of the block takes alike; the
// results must be the interpreter's, which runs the loops one after the other.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/run_util.h"
#include "gpu/gpu_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::AxisType;
using ir::DType;
using schedule::testing::it;

// for g Grid { for j Workgroup: x[g, j] = a[g, j] * 2;  for k Workgroup: y[g, k] = x[g, n-1-k] + 1 }
backends::CompileRequest mirrored_rows(std::int64_t rows, std::int64_t n) {
  const ir::NodeRef a = ir::make_node("a", DType::F32, {rows, n}), x = ir::make_node("x", DType::F32, {rows, n});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {rows, n});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex mirrored{{{-1, k}}, n - 1};
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(g), it(j)}), ir::constant(2, DType::F32)});
  const auto plus_one = ir::apply(ir::Op::Add, DType::F32, {ir::get(x, {it(g), mirrored}), ir::constant(1, DType::F32)});
  const auto body = ir::seq({ir::for_loop(j, 0, n, ir::set(x, {it(g), it(j)}, twice), AxisType::Workgroup),
                             ir::for_loop(k, 0, n, ir::set(y, {it(g), it(k)}, plus_one), AxisType::Workgroup)});
  return {{"mirrored_rows", ir::for_loop(g, 0, rows, body, AxisType::Grid), {}}, {a, x, y}};
}

// `request`'s Grid loop with its body under `if (g < last)`: a condition every thread of a block
// decides alike, so the barriers and first-thread statements go inside the If.
backends::CompileRequest under_an_if(backends::CompileRequest request, std::int64_t last) {
  const auto& grid = std::get<ir::For>(request.routine.body->node);
  const auto below = ir::apply(ir::Op::Cmplt, DType::I64, {ir::embed_index(it(grid.index)), ir::constant(last, DType::I64)});
  request.routine.body = ir::for_loop(grid.index, grid.begin, grid.end, ir::if_then(below, grid.body), grid.axis);
  return request;
}

TEST(GpuSiblingThreadLoops, ASecondLoopReadingOtherThreadsCellsSeesTheirWrites) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const backends::CompileRequest request = mirrored_rows(3, 64);
  std::vector<float> a(3 * 64);
  for (std::size_t c = 0; c < a.size(); ++c) a[c] = static_cast<float>(c);
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(a)};
  const std::string source = gpu_test::expect_as_on_the_interpreter(*gpu, request, inputs, 1);
  EXPECT_NE(source.find(gpu_test::spelling().barrier), std::string::npos) << source;
  gpu_test::expect_as_on_the_interpreter(*gpu, under_an_if(request, 2), inputs, 1);
}

// for g Grid { for s in [0, 4): { for j Workgroup: y[g, j] = x[g, n-1-j] + 1;
//                                 for k Workgroup: x[g, k] = y[g, k] * 2 } }
backends::CompileRequest ping_pong_rows(std::int64_t rows, std::int64_t n) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {rows, n}), y = ir::make_node("y", DType::F32, {rows, n});
  const ir::Symbol g = ir::fresh_symbol(), s = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::AxisIndex mirrored{{{-1, j}}, n - 1};
  const auto plus_one = ir::apply(ir::Op::Add, DType::F32, {ir::get(x, {it(g), mirrored}), ir::constant(1, DType::F32)});
  const auto twice = ir::apply(ir::Op::Mul, DType::F32, {ir::get(y, {it(g), it(k)}), ir::constant(2, DType::F32)});
  const auto step = ir::seq({ir::for_loop(j, 0, n, ir::set(y, {it(g), it(j)}, plus_one), AxisType::Workgroup),
                             ir::for_loop(k, 0, n, ir::set(x, {it(g), it(k)}, twice), AxisType::Workgroup)});
  return {{"ping_pong_rows", ir::for_loop(g, 0, rows, ir::for_loop(s, 0, 4, step), AxisType::Grid), {}}, {x, y}};
}

// On PoCL this checks the barrier between the two loops of each iteration: PoCL ends every
// iteration of a loop that holds a barrier with one of its own, so the barrier that ends an
// iteration for a GPU is checked in LowerForTarget.GpuEndsASerialLoopsIterationWithABarrier...
TEST(GpuSiblingThreadLoops, ThreadLoopsInASerialLoopOfABlockSeeEachOthersWrites) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const backends::CompileRequest request = ping_pong_rows(3, 64);
  std::vector<float> x(3 * 64);
  for (std::size_t c = 0; c < x.size(); ++c) x[c] = static_cast<float>(c % 7);
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(x)};
  gpu_test::expect_as_on_the_interpreter(*gpu, request, inputs, 0);
}

// for g Grid { for r in [0, n): s[g] += a[g, r];  for j Workgroup: y[g, j] = a[g, j] * s[g] }:
// the sum runs once per block, not once per thread of it.
backends::CompileRequest block_sum_then_scale(std::int64_t rows, std::int64_t n) {
  const ir::NodeRef a = ir::make_node("a", DType::F32, {rows, n}), s = ir::make_node("s", DType::F32, {rows});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {rows, n});
  const ir::Symbol g = ir::fresh_symbol(), r = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get(s, {it(g)}), ir::get(a, {it(g), it(r)})});
  const auto scale = ir::apply(ir::Op::Mul, DType::F32, {ir::get(a, {it(g), it(j)}), ir::get(s, {it(g)})});
  const auto body = ir::seq({ir::for_loop(r, 0, n, ir::set(s, {it(g)}, add)),
                             ir::for_loop(j, 0, n, ir::set(y, {it(g), it(j)}, scale), AxisType::Workgroup)});
  return {{"block_sum_then_scale", ir::for_loop(g, 0, rows, body, AxisType::Grid), {}}, {a, s, y}};
}

TEST(GpuSiblingThreadLoops, AStatementOutsideTheThreadLoopsRunsOncePerBlock) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const backends::CompileRequest request = block_sum_then_scale(3, 64);
  std::vector<float> a(3 * 64);
  for (std::size_t c = 0; c < a.size(); ++c) a[c] = static_cast<float>(c % 5);
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(a), test_util::bytes_of(std::vector<float>(3, 0.0f))};
  gpu_test::expect_as_on_the_interpreter(*gpu, request, inputs, 1);
  gpu_test::expect_as_on_the_interpreter(*gpu, under_an_if(request, 2), inputs, 1);
}

// for g Grid [0, 2) { for j Workgroup: x[g, j] = a[g, j]; for i: x[g, i] += b[i] (the first
// thread, after a barrier) }, then for h Grid [0, 3): z[h] = -inf: fission merges them, so the
// first statement's blocks run under `if (g < 2)`. PoCL 3.1 crashed running that kernel (a
// barrier, then a statement on one thread inside the guard, then another after it) until the
// OpenCL dialect ended the guarded region with a barrier (found by the hand-made annotations'
// fuzzer, batch 37); it also opens the region with one (the next test). The CUDA family prints
// no such barrier.
TEST(GpuSiblingThreadLoops, AGuardedBlockWithABarrierThenAFirstThreadStatementRuns) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::NodeRef a = ir::make_node("a", DType::F32, {2, 3}), b = ir::make_node("b", DType::F32, {3});
  const ir::NodeRef x = ir::make_node("x", DType::F32, {2, 3}), z = ir::make_node("z", DType::F32, {3});
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol(), i = ir::fresh_symbol(), h = ir::fresh_symbol();
  const auto add = ir::apply(ir::Op::Add, DType::F32, {ir::get(x, {it(g), it(i)}), ir::get(b, {it(i)})});
  const auto rows = ir::for_loop(
      g, 0, 2,
      ir::seq({ir::for_loop(j, 0, 3, ir::set(x, {it(g), it(j)}, ir::get(a, {it(g), it(j)})), AxisType::Workgroup),
               ir::for_loop(i, 0, 3, ir::set(x, {it(g), it(i)}, add))}),
      AxisType::Grid);
  const auto fill = ir::for_loop(h, 0, 3, ir::set(z, {it(h)}, ir::constant(-INFINITY, DType::F32)), AxisType::Grid);
  const backends::CompileRequest request{{"guarded_block", ir::seq({rows, fill}), {}}, {a, b, x, z}};
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6}),
                                             test_util::bytes_of(std::vector<float>{10, 20, 30}),
                                             test_util::bytes_of(std::vector<float>(6, 0.0f)),
                                             test_util::bytes_of(std::vector<float>(3, 0.0f))};
  const std::string source = gpu_test::expect_as_on_the_interpreter(*gpu, request, inputs, 2);
  const std::string barrier = gpu_test::spelling().barrier;
  std::size_t count = 0;
  for (std::size_t at = source.find(barrier); at != std::string::npos; at = source.find(barrier, at + 1)) ++count;
  EXPECT_EQ(count, gpu_test::backend_name() == "opencl" ? 3u : 1u) << source;
}

// for g Grid [0, 4): for r WorkgroupReduce [0, 2): y[g, r] = -a[r, g] (the first thread of each
// block), then for h Grid [0, 2): { for c WorkgroupReduce [0, 2): z[h, c] = relu(a[h, c]);
// for c in [2, 4): z[h, c] = relu(a[h, c]) (the first thread, after a barrier) }: one kernel,
// the second statement under `if (h < 2)`. PoCL 3.1 skipped that guarded region altogether
// after the first statement's one-thread region (z kept its old values; the hand-made
// annotations' fuzzer with 900 annotations a batch, seed 0) until the OpenCL dialect opened
// the region with a barrier too.
TEST(GpuSiblingThreadLoops, AGuardedBlockWithABarrierAfterAFirstThreadStatementRuns) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const ir::NodeRef a = ir::make_node("a", DType::F32, {2, 4}), y = ir::make_node("y", DType::F32, {4, 2});
  const ir::NodeRef z = ir::make_node("z", DType::F32, {2, 4});
  const ir::Symbol g = ir::fresh_symbol(), r = ir::fresh_symbol(), h = ir::fresh_symbol(), c = ir::fresh_symbol(),
                   d = ir::fresh_symbol();
  const auto negated = ir::apply(ir::Op::Neg, DType::F32, {ir::get(a, {it(r), it(g)})});
  const auto first = ir::for_loop(g, 0, 4, ir::for_loop(r, 0, 2, ir::set(y, {it(g), it(r)}, negated), AxisType::WorkgroupReduce),
                                  AxisType::Grid);
  auto relu = [&](ir::Symbol col) {
    return ir::set(z, {it(h), it(col)}, ir::apply(ir::Op::Relu, DType::F32, {ir::get(a, {it(h), it(col)})}));
  };
  const auto second = ir::for_loop(
      h, 0, 2, ir::seq({ir::for_loop(c, 0, 2, relu(c), AxisType::WorkgroupReduce), ir::for_loop(d, 2, 4, relu(d))}),
      AxisType::Grid);
  const backends::CompileRequest request{{"guarded_after_first_thread", ir::seq({first, second}), {}}, {a, y, z}};
  const std::vector<test_util::Bytes> inputs{test_util::bytes_of(std::vector<float>{1, -2, 3, -4, 5, -6, 7, -8}),
                                             test_util::bytes_of(std::vector<float>(8, 99.0f)),
                                             test_util::bytes_of(std::vector<float>(8, 99.0f))};
  const std::string source = gpu_test::expect_as_on_the_interpreter(*gpu, request, inputs, 1);
  if (gpu_test::prints_kernels()) {
    EXPECT_NE(source.find(" < 2) {"), std::string::npos) << "one kernel, the second statement guarded\n" << source;
  }
}

}  // namespace
}  // namespace cannl
