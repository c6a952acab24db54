// Threefry-4x32 against the Random123 known-answer vectors (kat_vectors: "threefry4x32 20
// <counter> <key> <result>"), the light variant against hand-traced values, and uniform1.
#include <gtest/gtest.h>

#include <limits>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"

namespace cannl::interp {
namespace {

using ir::DType;
using ir::Op;
using ir::Uint4x32;

struct Kat {
  Uint4x32 counter, key, expected;
};

const Kat kKats[] = {
    {{{0, 0, 0, 0}}, {{0, 0, 0, 0}}, {{0x9c6ca96a, 0xe17eae66, 0xfc10ecd4, 0x5256a7d8}}},
    {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0x2a881696, 0x57012287, 0xf6c7446e, 0xa16a6732}}},
    {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0xa4093822, 0x299f31d0, 0x082efa98, 0xec4e6c89}},
     {{0x59cd1dbb, 0xb8879579, 0x86b5d00c, 0xac8b6d84}}},
};

TEST(Threefry, CryptoMatchesRandom123Kats) {
  for (const Kat& k : kKats) {
    EXPECT_EQ(threefry4x32_crypto(k.key, k.counter), k.expected);
    EXPECT_EQ(threefry4x32(k.key, k.counter, 20), k.expected);
  }
}

TEST(Threefry, ApplyTakesKeyThenCounter) {
  const Kat& k = kKats[2];
  const Value args[] = {Value::of(k.key), Value::of(k.counter)};
  EXPECT_EQ(apply_op(Op::ThreefryCrypto, DType::U4x32, args).get<Uint4x32>(), k.expected);
  // Non-u4x32 arguments convert: i32 0 is the all-zero block.
  const Value zeros[] = {Value::of(0), Value::of(0.0)};
  EXPECT_EQ(apply_op(Op::ThreefryCrypto, DType::U4x32, zeros).get<Uint4x32>(), kKats[0].expected);
}

// Traced by hand: ks = {key, 0x1BD11BDA ^ key words}; rounds 0 and 1 then x[i] += ks[(1+i)%5],
// x3 += 1.
TEST(Threefry, LightIsTwoRoundsAndOneInjection) {
  EXPECT_EQ(threefry4x32_light({{0, 0, 0, 0}}, {{0, 0, 0, 0}}), (Uint4x32{{0, 0, 0, 0x1BD11BDB}}));
  // counter {1,0,0,0}: round 0 -> {1,1,0,0}; round 1 -> {1, rotl(1,21)^1, 1, 1}.
  EXPECT_EQ(threefry4x32_light({{0, 0, 0, 0}}, {{1, 0, 0, 0}}),
            (Uint4x32{{1, 0x200001, 1, 0x1BD11BDC}}));
  // key {1,0,0,0}, counter 0: same state after the first injection; ks4 = 0x1BD11BDB.
  EXPECT_EQ(threefry4x32_light({{1, 0, 0, 0}}, {{0, 0, 0, 0}}),
            (Uint4x32{{1, 0x200001, 1, 0x1BD11BDD}}));
  const Value args[] = {Value::of(Uint4x32{{1, 0, 0, 0}}), Value::of(0)};
  EXPECT_EQ(apply_op(Op::ThreefryLight, DType::U4x32, args).get<Uint4x32>(),
            (Uint4x32{{1, 0x200001, 1, 0x1BD11BDD}}));
}

TEST(Threefry, ResultConvertsToTheApplyDtype) {
  const Value args[] = {Value::of(0), Value::of(0)};
  EXPECT_EQ(apply_op(Op::ThreefryCrypto, DType::U64, args).get<std::uint64_t>(),
            0xe17eae669c6ca96au);
}

Value u1(Uint4x32 bits, DType dtype) {
  const Value arg[] = {Value::of(bits)};
  return apply_op(Op::Uniform1, dtype, arg);
}

TEST(Uniform1, FloatsTakeTheTopBitsIntoUnitInterval) {
  EXPECT_EQ(u1({{0, 0, 0, 0}}, DType::F32).get<float>(), 0.0f);
  EXPECT_EQ(u1({{0x100, 0, 0, 0}}, DType::F32).get<float>(), 0x1p-24f);
  EXPECT_EQ(u1({{0xFFFFFFFF, 0, 0, 0}}, DType::F32).get<float>(), 1 - 0x1p-24f);
  EXPECT_EQ(u1({{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}, DType::F64).get<double>(), 1 - 0x1p-53);
  EXPECT_EQ(u1({{0x800, 0, 0, 0}}, DType::F64).get<double>(), 0x1p-53);
  // Narrow floats round the f32: just below 1 becomes 1 in bf16.
  const Value b = u1({{0xFFFFFFFF, 0, 0, 0}}, DType::BF16);
  EXPECT_EQ(b.dtype, DType::BF16);
  EXPECT_EQ(b.get<float>(), 1.0f);
  EXPECT_EQ(u1({{0x80000000, 0, 0, 0}}, DType::F16).get<float>(), 0.5f);
}

TEST(Uniform1, IntegersTakeFullRange) {
  EXPECT_EQ(u1({{0x80000000, 5, 0, 0}}, DType::I32).get<std::int32_t>(), -2147483647 - 1);
  EXPECT_EQ(u1({{0x80000000, 5, 0, 0}}, DType::U32).get<std::uint32_t>(), 0x80000000u);
  EXPECT_EQ(u1({{1, 0x80000000, 7, 7}}, DType::I64).get<std::int64_t>(),
            std::numeric_limits<std::int64_t>::min() + 1);
  EXPECT_EQ(u1({{1, 0x80000000, 7, 7}}, DType::U64).get<std::uint64_t>(), 0x8000000000000001u);
  EXPECT_EQ(u1({{0x1FF, 0, 0, 0}}, DType::U8).get<std::uint8_t>(), 255);
}

// With 20 rounds; the 2-round light variant leaves word 0 close to counter + key for small
// sequential counters (see LightWordZeroIsWeak), so uniform1 of it is far from uniform.
TEST(Uniform1, ThreefryStreamFillsTheUnitInterval) {
  double sum32 = 0, sum64 = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    const Uint4x32 bits =
        threefry4x32_crypto({{42, 0, 0, 0}}, {{static_cast<std::uint32_t>(i), 0, 0, 0}});
    const float f = u1(bits, DType::F32).get<float>();
    const double d = u1(bits, DType::F64).get<double>();
    ASSERT_TRUE(f >= 0.0f && f < 1.0f) << f;
    ASSERT_TRUE(d >= 0.0 && d < 1.0) << d;
    sum32 += f;
    sum64 += d;
  }
  EXPECT_NEAR(sum32 / n, 0.5, 0.05);
  EXPECT_NEAR(sum64 / n, 0.5, 0.05);
}

// Documents a property of the light variant that callers must know: word 0 after two rounds
// and one injection is counter0 + key0 + ks1 (no mixing from other words while they are zero).
TEST(Uniform1, LightWordZeroIsWeak) {
  const Uint4x32 bits = threefry4x32_light({{42, 0, 0, 0}}, {{7, 0, 0, 0}});
  EXPECT_EQ(bits.v[0], 49u);
}

TEST(Uniform1, NeedsAU4x32Argument) {
  const Value arg[] = {Value::of(std::uint64_t{5})};
  try {
    apply_op(Op::Uniform1, DType::F32, arg);
    ADD_FAILURE() << "uniform1 of a u64 must throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("u4x32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(u1({{0, 0, 0, 0}}, DType::U4x32), InternalError);
}

}  // namespace
}  // namespace cannl::interp
