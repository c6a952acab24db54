// Vectorized loops on the GPU backend (ir::gpu_vector_loop, codegen/gpu/vector_loop_printer.cpp):
// a thread's 4 lanes moved as 16-byte vectors where aligned and computed lane by lane, bitwise
// the interpreter's serial loop: aligned and misaligned rows, an offset read, a statement reading
// what the one before it wrote, i32 lanes, and special values (NaN, -0, infinities) through max
// and where (exactly rounded ops only: the device's exp may differ from the host's by an ulp,
// lanes or not).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/run_util.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/transforms.h"
#include "gpu/gpu_test_util.h"
#include "schedule/schedule_test_util.h"

namespace cannl {
namespace {

using ir::AxisType;
using ir::DType;
using schedule::testing::it;

ir::AxisIndex lane_of(ir::Symbol q, ir::Symbol l, std::int64_t offset = 0) { return {{{4, q}, {1, l}}, offset}; }

struct VectorRoutine {
  ir::LoweredRoutine routine;
  std::vector<ir::NodeRef> params;  // inputs first
};

// Over rows i (Grid) of `cols` cells, 4 lanes l (Vectorized) per thread q (Workgroup) over the
// vectors that leave the row's last cell to the off-by-one read:
//   y[i, c] = x[i, c] * b[c] + x[i, c]      (aligned vector reads and store)
//   z[i, c] = max(y[i, c], x[i, c + 1])     (y read after its store; a read off by one lane)
//   w[i, c] = where(x[i, c], z[i, c], b[c]) (NaN selects, -0 does not)
//   n[i, c] = k[i, c] * 3 + 1               (i32 lanes)
VectorRoutine lanes_routine(std::int64_t rows, std::int64_t cols) {
  const ir::NodeRef x = ir::make_node("x", DType::F32, {rows, cols}), b = ir::make_node("b", DType::F32, {cols});
  const ir::NodeRef k = ir::make_node("k", DType::I32, {rows, cols});
  const ir::NodeRef y = ir::make_node("y", DType::F32, {rows, cols}), z = ir::make_node("z", DType::F32, {rows, cols});
  const ir::NodeRef w = ir::make_node("w", DType::F32, {rows, cols}), n = ir::make_node("n", DType::I32, {rows, cols});
  const ir::Symbol i = ir::fresh_symbol(), q = ir::fresh_symbol(), l = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> cell{it(i), lane_of(q, l)}, next{it(i), lane_of(q, l, 1)}, column{lane_of(q, l)};
  const auto f32 = [](ir::Op op, std::vector<ir::ScalarRef> args) { return ir::apply(op, DType::F32, std::move(args)); };
  const auto body = ir::seq({
      ir::set(y, cell, f32(ir::Op::Add, {f32(ir::Op::Mul, {ir::get(x, cell), ir::get(b, column)}), ir::get(x, cell)})),
      ir::set(z, cell, f32(ir::Op::Max, {ir::get(y, cell), ir::get(x, next)})),
      ir::set(w, cell, f32(ir::Op::Where, {ir::get(x, cell), ir::get(z, cell), ir::get(b, column)})),
      ir::set(n, cell, ir::apply(ir::Op::Add, DType::I32, {ir::apply(ir::Op::Mul, DType::I32, {ir::get(k, cell), ir::constant(3, DType::I32)}),
                                                          ir::constant(1, DType::I32)})),
  });
  const std::int64_t vectors = (cols - 1) / 4;  // the off-by-one read stays inside the row
  const auto nest = ir::for_loop(i, 0, rows,
                                 ir::for_loop(q, 0, vectors, ir::for_loop(l, 0, 4, body, AxisType::Vectorized), AxisType::Workgroup),
                                 AxisType::Grid);
  return {{"vector_lanes", nest, {}}, {x, b, k, y, z, w, n}};
}

std::vector<float> special_floats(std::int64_t count) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {nan, -0.0f, 0.0f, inf, -inf, 1e-38f, -88.0f, 89.0f};
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::size_t c = 0; c < v.size(); ++c) v[c] = c % 11 == 5 ? specials[(c / 11) % 8] : std::sin(static_cast<float>(c)) * 4.0f;
  return v;
}

TEST(GpuVectorLoop, LanesAreBitwiseTheSerialLoopAlignedOrNot) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  ASSERT_EQ(gpu->target().gpu_vector_bytes, 16);
  // Rows of 64 cells keep every row's vectors aligned; rows of 66 leave odd rows 2 cells off.
  for (const std::int64_t cols : {64, 66}) {
    SCOPED_TRACE(std::to_string(cols) + " columns");
    const VectorRoutine v = lanes_routine(6, cols);
    std::vector<std::int32_t> ks(static_cast<std::size_t>(6 * cols));
    for (std::size_t c = 0; c < ks.size(); ++c) ks[c] = static_cast<std::int32_t>(c * 2654435761u);  // wraps
    const std::vector<test_util::Bytes> inputs{test_util::bytes_of(special_floats(6 * cols)),
                                               test_util::bytes_of(special_floats(cols)), test_util::bytes_of(ks)};
    const backends::CompileRequest request{v.routine, v.params};
    const std::string source = gpu->compile(request)->source();
    // Aligned rows move x, b, y and the others as vectors; misaligned ones only b (one row).
    if (gpu_test::prints_kernels()) {
      EXPECT_NE(source.find(gpu_test::spelling().vector_load), std::string::npos) << source;
      EXPECT_EQ(source.find(gpu_test::spelling().vector_store) != std::string::npos, cols == 64) << source;
    }
    const auto on_gpu = test_util::run_on(*gpu, request, inputs);
    const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), request, inputs);
    for (std::size_t out = 3; out < v.params.size(); ++out) {
      const auto got = test_util::values_of<std::uint32_t>(on_gpu[out]), want = test_util::values_of<std::uint32_t>(on_interp[out]);
      std::size_t first = 0;
      while (first < got.size() && got[first] == want[first]) ++first;
      EXPECT_EQ(first, got.size()) << v.params[out]->debug_name() << ": the bits differ first at cell " << first << "\n" << source;
    }
  }
}

}  // namespace
}  // namespace cannl
