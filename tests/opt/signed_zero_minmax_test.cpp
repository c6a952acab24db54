// Max and min of signed zeros and NaN: found by the differential run on the C backend (seeds
// 50681 + 50698 combined in one routine), where `min(-0, max(..))` gave +0 or -0 depending on
// the code around it: C leaves the sign of fmaxf(-0, +0) to the implementation. The loop IR
// defines max/min as IEEE 754-2019 maximumNumber / minimumNumber (a NaN loses, +0 is above -0)
// and every backend must give exactly those bits, whatever the optimizer did to the code around.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "backends/run_util.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (float x : v) out.push_back(std::bit_cast<std::uint32_t>(x));
  return out;
}

TEST(SignedZeroMinMax, BackendsGiveMaximumNumberAndMinimumNumberBits) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a{-0.0f, 0.0f, nan, 1.0f, -0.0f, 0.0f, 3.0f};
  const std::vector<float> b{0.0f, -0.0f, 2.0f, nan, -0.0f, 0.0f, -3.0f};
  const std::vector<float> want_max{0.0f, 0.0f, 2.0f, 1.0f, -0.0f, 0.0f, 3.0f};
  const std::vector<float> want_min{-0.0f, -0.0f, 2.0f, 1.0f, -0.0f, 0.0f, -3.0f};
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  auto na = ir::make_node("a", DType::F32, {n}), nb = ir::make_node("b", DType::F32, {n});
  auto mx = ir::make_node("mx", DType::F32, {n}), mn = ir::make_node("mn", DType::F32, {n});
  const ir::Symbol i = ir::fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto both = [&](Op op) { return ir::apply(op, DType::F32, {ir::get(na, at), ir::get(nb, at)}); };
  const backends::CompileRequest r{
      ir::LoweredRoutine{"minmax", ir::for_loop(i, 0, n, ir::seq({ir::set(mx, at, both(Op::Max)),
                                                                  ir::set(mn, at, both(Op::Min))})), {}},
      {na, nb, mx, mn}};
  for (auto backend : {backends::make_interpreter_backend(), test_util::cc()}) {
    const auto out = run_on(*backend, r, {bytes_of(a), bytes_of(b), {}, {}});
    EXPECT_EQ(bits_of(values_of<float>(out[2])), bits_of(want_max)) << backend->name();
    EXPECT_EQ(bits_of(values_of<float>(out[3])), bits_of(want_min)) << backend->name();
  }
}

}  // namespace
}  // namespace cannl::opt
