// Float constants on the GPU backend keep the interpreter's bits: a constant denotes its value
// converted to its dtype (loop_ir.h), NaNs included, whose sign and payload a store keeps. The
// dialects' NAN macro is the positive quiet NaN only where the prelude defines it so (OpenCL's
// own is some quiet NaN: PoCL's is 0x7fffffff), and any other NaN is printed by its bits.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "backends/run_util.h"
#include "gpu/gpu_test_util.h"

namespace cannl {
namespace {

using ir::DType;

// y[k] = the k-th constant, one statement each, in a one-thread kernel.
backends::CompileRequest stored_constants(DType dtype, const std::vector<double>& values) {
  const ir::NodeRef y = ir::make_node("y", dtype, {static_cast<std::int64_t>(values.size())});
  std::vector<ir::StmtRef> sets;
  for (std::size_t k = 0; k < values.size(); ++k)
    sets.push_back(ir::set(y, {ir::AxisIndex::fixed(static_cast<std::int64_t>(k))}, ir::constant(values[k], dtype)));
  return {{"constants", ir::seq(sets), {}}, {y}};
}

TEST(GpuConstants, NansKeepTheirSignAndPayloadInEveryFloatDtype) {
  auto gpu = gpu_test::backend();
  if (!gpu) GTEST_SKIP() << gpu_test::unavailable_reason();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values{nan, -nan, std::bit_cast<double>(std::uint64_t{0x7ff8000000000001}),
                                   std::bit_cast<double>(std::uint64_t{0xfff4000020000000}), -0.0,
                                   -std::numeric_limits<double>::infinity(), 1.5};
  for (const DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const backends::CompileRequest request = stored_constants(dtype, values);
    EXPECT_EQ(test_util::run_on(*gpu, request, {{}})[0],
              test_util::run_on(*backends::make_interpreter_backend(), request, {{}})[0])
        << ir::dtype_name(dtype) << "\n" << gpu->compile(request)->source();
  }
}

}  // namespace
}  // namespace cannl
