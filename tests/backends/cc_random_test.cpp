// Threefry4x32 and uniform1 in generated C: the Random123 known-answer vector, and agreement with
// the interpreter for both variants and every uniform1 output dtype.
#include <gtest/gtest.h>

#include "backends/routines.h"
#include "backends/run_util.h"

namespace cannl {
namespace {

using namespace cannl::ir;
using test_util::bytes_of;
using test_util::run_on;
using test_util::values_of;

// out[i] = threefry(key[i], counter[i]); params key, counter, out (all u4x32).
backends::CompileRequest threefry(Op op, std::int64_t n) {
  auto key = make_node("key", DType::U4x32, {n});
  auto counter = make_node("counter", DType::U4x32, {n});
  auto out = make_node("out", DType::U4x32, {n});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  auto body = for_loop(i, 0, n, set(out, at, apply(op, DType::U4x32, {get(key, at), get(counter, at)})));
  return {LoweredRoutine{std::string(op_name(op)), body, {}}, {key, counter, out}};
}

TEST(CcRandom, ThreefryCryptoKnownAnswer) {
  auto cc = backends::make_cc_backend();
  // Random123 kat_vectors: threefry4x32_20, key 0, counter 0; and all-ones key and counter.
  const std::vector<std::uint32_t> key{0, 0, 0, 0, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  const std::vector<std::uint32_t> ctr = key;
  auto out = run_on(*cc, threefry(Op::ThreefryCrypto, 2), {bytes_of(key), bytes_of(ctr)});
  EXPECT_EQ(values_of<std::uint32_t>(out[2]),
            (std::vector<std::uint32_t>{0x9c6ca96a, 0xe17eae66, 0xfc10ecd4, 0x5256a7d8,
                                        0x2a881696, 0x57012287, 0xf6c7446e, 0xa16a6732}));
}

TEST(CcRandom, BothVariantsAgreeWithInterpreter) {
  auto cc = backends::make_cc_backend();
  auto interp = backends::make_interpreter_backend();
  std::vector<std::uint32_t> key(4 * 8), ctr(4 * 8);
  for (std::size_t k = 0; k < key.size(); ++k) {
    key[k] = static_cast<std::uint32_t>(k * 0x9E3779B9u);
    ctr[k] = static_cast<std::uint32_t>(k * 7);
  }
  for (Op op : {Op::ThreefryCrypto, Op::ThreefryLight}) {
    auto r = threefry(op, 8);
    EXPECT_EQ(run_on(*cc, r, {bytes_of(key), bytes_of(ctr)}), run_on(*interp, r, {bytes_of(key), bytes_of(ctr)}))
        << op_name(op);
  }
}

TEST(CcRandom, Uniform1EveryDtypeAgreesWithInterpreter) {
  auto cc = backends::make_cc_backend();
  auto interp = backends::make_interpreter_backend();
  auto bits = make_node("bits", DType::U4x32, {4});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  backends::CompileRequest r{LoweredRoutine{"uniform", nullptr, {}}, {bits}};
  std::vector<StmtRef> sets;
  for (DType t : kAllDTypes) {
    if (t == DType::U4x32) continue;  // uniform1 yields a number
    auto out = make_node("u_" + std::string(dtype_name(t)), t, {4});
    sets.push_back(set(out, at, apply(Op::Uniform1, compute_dtype(t), {get(bits, at)})));
    r.params.push_back(out);
  }
  r.routine.body = for_loop(i, 0, 4, seq(sets));
  const std::vector<std::uint32_t> words{0, 0, 0, 0, 0xffffffffu, 0xffffffffu, 1, 2,
                                         0x12345678u, 0x9abcdef0u, 3, 4, 0x80000000u, 0x1u, 0, 0};
  const auto mine = run_on(*cc, r, {bytes_of(words)});
  EXPECT_EQ(mine, run_on(*interp, r, {bytes_of(words)}));
  const auto f32 = values_of<float>(mine[2]);
  EXPECT_EQ(f32[0], 0.0f);
  EXPECT_EQ(f32[1], static_cast<float>(0xffffff) / 16777216.0f);  // largest value below 1
  const auto f64 = values_of<double>(mine[1]);
  EXPECT_LT(f64[1], 1.0);
  EXPECT_GT(f64[1], 0.9999999);
}

}  // namespace
}  // namespace cannl
