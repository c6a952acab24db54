// Tensors named like what a GPU dialect itself writes in a kernel (its vector types, loads, stores
// and constructors, a barrier's flags, the counter of a zeroing loop) get other identifiers: a
// parameter of that name would hide the dialect's word, and the kernel would not compile. Each
// name below is one of some dialect (CUDA: make_float4, uint4; OpenCL: vload4, vstore4,
// CLK_LOCAL_MEM_FENCE; every one: z, INT32_MAX); every module compiles for CUDA (NVRTC) too.
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

constexpr const char* kDialectWords[] = {"make_float4", "make_uint4", "uint4", "vload4", "vstore4",
                                         "CLK_LOCAL_MEM_FENCE", "INT32_MAX", "z"};

// y[i, 4q + l] = x[i, 4q + l] * 3 over 4 lanes l (Vectorized: aligned 16-byte vectors) of threads q.
backends::CompileRequest tripled_lanes(const std::string& x_label, DType dtype) {
  const ir::NodeRef x = ir::make_node(x_label, dtype, {4, 64}), y = ir::make_node("y", dtype, {4, 64});
  const ir::Symbol i = ir::fresh_symbol(), q = ir::fresh_symbol(), l = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> at{it(i), ir::AxisIndex{{{4, q}, {1, l}}, 0}};
  const auto tripled = ir::apply(ir::Op::Mul, dtype, {ir::get(x, at), ir::constant(3, dtype)});
  const auto body = ir::for_loop(
      i, 0, 4, ir::for_loop(q, 0, 16, ir::for_loop(l, 0, 4, ir::set(y, at, tripled), AxisType::Vectorized), AxisType::Workgroup),
      AxisType::Grid);
  return {{"lanes", body, {}}, {x, y}};
}

// One block: every thread zeroes a (a loop inside the kernel), then out[j] = a[j] + x[j].
backends::CompileRequest zeroed_then_added(const std::string& a_label) {
  const ir::NodeRef a = ir::make_node(a_label, DType::F32, {16}), x = ir::make_node("x", DType::F32, {16});
  const ir::NodeRef out = ir::make_node("out", DType::F32, {16});
  const ir::Symbol b = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto sum = ir::apply(ir::Op::Add, DType::F32, {ir::get(a, {it(j)}), ir::get(x, {it(j)})});
  const auto body = ir::for_loop(
      b, 0, 1, ir::seq({ir::zero_out(a), ir::for_loop(j, 0, 16, ir::set(out, {it(j)}, sum), AxisType::Workgroup)}),
      AxisType::Grid);
  return {{"zeroed", body, {}}, {a, x, out}};
}

test_util::Bytes counting(std::int64_t n, DType dtype) {
  if (dtype == DType::U32) {
    std::vector<std::uint32_t> v(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::uint32_t>(k * 2654435761u);
    return test_util::bytes_of(v);
  }
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<float>(k)) * 5.0f;
  return test_util::bytes_of(v);
}

TEST(GpuIdentifiers, TensorsNamedLikeTheDialectsWordsCompileAndRun) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  for (const char* label : kDialectWords) {
    SCOPED_TRACE(label);
    for (const DType dtype : {DType::F32, DType::U32}) {
      const backends::CompileRequest lanes = tripled_lanes(label, dtype);
      const auto on_gpu = test_util::run_on(*gpu, lanes, {counting(256, dtype), {}});
      const auto on_interp = test_util::run_on(*backends::make_interpreter_backend(), lanes, {counting(256, dtype), {}});
      EXPECT_EQ(on_gpu[1], on_interp[1]) << ir::dtype_name(dtype);
    }
    const backends::CompileRequest zeroed = zeroed_then_added(label);
    const std::vector<test_util::Bytes> inputs{counting(16, DType::F32), counting(16, DType::F32), {}};
    EXPECT_EQ(test_util::run_on(*gpu, zeroed, inputs)[2],
              test_util::run_on(*backends::make_interpreter_backend(), zeroed, inputs)[2]);
  }
}

}  // namespace
}  // namespace cannl
