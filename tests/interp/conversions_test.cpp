// The conversion rules of loop_ir.h: saturation, NaN, wrap, single rounding to narrow floats,
// u4x32 packing, constants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/interp/storage.h"
#include "cannl/support/error.h"
#include "cannl/support/float_codecs.h"

namespace cannl::interp {
namespace {

using ir::DType;
using ir::Uint4x32;

template <class T>
T to(const Value& v, DType dtype) {
  return convert(v, dtype).get<T>();
}

TEST(Conversions, FloatToIntTruncatesAndSaturates) {
  EXPECT_EQ(to<std::int32_t>(Value::of(3e9f), DType::I32),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(to<std::int32_t>(Value::of(-3e9f), DType::I32),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(to<std::int32_t>(Value::of(-2.9), DType::I32), -2);
  EXPECT_EQ(to<std::int32_t>(Value::of(2147483647.9), DType::I32), 2147483647);
  EXPECT_EQ(to<std::uint32_t>(Value::of(-1.5f), DType::U32), 0u);
  EXPECT_EQ(to<std::uint32_t>(Value::of(-0.5f), DType::U32), 0u);
  EXPECT_EQ(to<std::uint32_t>(Value::of(4294967295.5), DType::U32), 4294967295u);
  EXPECT_EQ(to<std::uint8_t>(Value::of(255.9f), DType::U8), 255);
  EXPECT_EQ(to<std::uint8_t>(Value::of(256.0f), DType::U8), 255);
  EXPECT_EQ(to<std::uint8_t>(Value::of(-1.0f), DType::U8), 0);
  EXPECT_EQ(to<std::int64_t>(Value::of(0x1p63), DType::I64),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(to<std::int64_t>(Value::of(-0x1p63), DType::I64),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(to<std::uint64_t>(Value::of(1e19), DType::U64), 10000000000000000000u);
  EXPECT_EQ(to<std::uint64_t>(Value::of(2e19), DType::U64),
            std::numeric_limits<std::uint64_t>::max());
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(to<std::int32_t>(Value::of(inf), DType::I32), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(to<std::uint64_t>(Value::of(-inf), DType::U64), 0u);
}

TEST(Conversions, NanToEveryIntegerIsZero) {
  const Value nan32 = Value::of(std::nanf(""));
  const Value nan64 = Value::of(std::nan(""));
  for (DType t : {DType::I32, DType::I64, DType::U32, DType::U64, DType::U8}) {
    EXPECT_FALSE(is_nonzero(convert(nan32, t))) << ir::dtype_name(t);
    EXPECT_FALSE(is_nonzero(convert(nan64, t))) << ir::dtype_name(t);
  }
  EXPECT_TRUE(std::isnan(to<float>(nan64, DType::F32)));
  EXPECT_TRUE(std::isnan(to<float>(nan64, DType::BF16)));
  EXPECT_TRUE(std::isnan(to<double>(nan32, DType::F64)));
}

TEST(Conversions, IntToIntWrapsLikeACast) {
  EXPECT_EQ(to<std::uint32_t>(Value::of(-1), DType::U32), 0xFFFFFFFFu);
  EXPECT_EQ(to<std::int32_t>(Value::of(0xFFFFFFFFu), DType::I32), -1);
  EXPECT_EQ(to<std::int32_t>(Value::of(std::int64_t{0x100000005}), DType::I32), 5);
  EXPECT_EQ(to<std::uint8_t>(Value::of(-1), DType::U8), 255);
  EXPECT_EQ(to<std::uint8_t>(Value::of(300), DType::U8), 44);
  EXPECT_EQ(to<std::uint64_t>(Value::of(-1), DType::U64),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(to<std::int32_t>(Value::of(std::uint8_t{200}), DType::I32), 200);
}

TEST(Conversions, IntToFloatIsACastRoundingToNearestEven) {
  const std::int64_t two53_plus1 = (std::int64_t{1} << 53) + 1;
  EXPECT_EQ(to<double>(Value::of(two53_plus1), DType::F64), 0x1p53);
  EXPECT_EQ(to<float>(Value::of(16777217), DType::F32), 16777216.0f);
  EXPECT_EQ(to<float>(Value::of(std::numeric_limits<std::uint64_t>::max()), DType::F32), 0x1p64f);
  EXPECT_EQ(to<double>(Value::of(-7), DType::F64), -7.0);
}

TEST(Conversions, FloatToFloatRoundsToNearestEven) {
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-24), DType::F32), 1.0f);  // tie -> even
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-24 + 0x1p-50), DType::F32), 1 + 0x1p-23f);
  EXPECT_EQ(to<double>(Value::of(0.1f), DType::F64), static_cast<double>(0.1f));
}

// Narrowing from f64 rounds once: via f32 the first rounding would land on a tie and the second
// round it to even, the wrong way.
TEST(Conversions, F64ToNarrowRoundsOnce) {
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-8 + 0x1p-30), DType::BF16), 1 + 0x1p-7f);
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-11 + 0x1p-30), DType::F16), 1 + 0x1p-10f);
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-3 + 0x1p-30), DType::FP8), 1.25f);
  // The same through f32 rounds twice (documenting why the rule exists).
  const Value via_f32 = convert(Value::of(1 + 0x1p-8 + 0x1p-30), DType::F32);
  EXPECT_EQ(to<float>(via_f32, DType::BF16), 1.0f);
}

TEST(Conversions, IntToNarrowGoesThroughF64) {
  // 2^24 + 2^16 + 1 is just above a bf16 midpoint; through f32 it would become the midpoint.
  const std::int64_t n = (std::int64_t{1} << 24) + (1 << 16) + 1;
  EXPECT_EQ(to<float>(Value::of(n), DType::BF16), 0x1p24f + 0x1p17f);
  EXPECT_TRUE(std::isinf(to<float>(Value::of(100000), DType::F16)));  // f16 overflows
  EXPECT_EQ(to<float>(Value::of(100000), DType::FP8), 57344.0f);      // fp8 saturates
}

TEST(Conversions, NarrowValuesDecodeExactly) {
  const Value b = Value::narrow(DType::BF16, 3.5f);
  EXPECT_EQ(to<double>(b, DType::F64), 3.5);
  EXPECT_EQ(to<std::int32_t>(b, DType::I32), 3);
  EXPECT_EQ(to<std::uint8_t>(Value::narrow(DType::FP8, 57344.0f), DType::U8), 255);
  // f16 -> bf16 goes through the f32 codec: 1 + 2^-10 is below bf16's half ulp.
  EXPECT_EQ(to<float>(Value::narrow(DType::F16, 1 + 0x1p-10f), DType::BF16), 1.0f);
  EXPECT_EQ(to<float>(Value::of(1 + 0x1p-8f + 0x1p-23f), DType::BF16), 1 + 0x1p-7f);
}

TEST(Conversions, ToU4x32PacksTheValueAsInt64) {
  auto words = [](const Value& v) { return convert(v, DType::U4x32).get<Uint4x32>(); };
  EXPECT_EQ(words(Value::of(-1)), (Uint4x32{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}));
  EXPECT_EQ(words(Value::of(0xFFFFFFFFu)), (Uint4x32{{0xFFFFFFFF, 0, 0, 0}}));
  EXPECT_EQ(words(Value::of(std::uint64_t{0x8000000000000001})), (Uint4x32{{1, 0x80000000, 0, 0}}));
  EXPECT_EQ(words(Value::of(-1.5f)), (Uint4x32{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}));
  EXPECT_EQ(words(Value::of(1e30)), (Uint4x32{{0xFFFFFFFF, 0x7FFFFFFF, 0, 0}}));
  EXPECT_EQ(words(Value::of(std::nan(""))), (Uint4x32{{0, 0, 0, 0}}));
  EXPECT_EQ(words(Value::of(std::uint8_t{7})), (Uint4x32{{7, 0, 0, 0}}));
}

TEST(Conversions, FromU4x32TakesTheLow64Bits) {
  const Value v = Value::of(Uint4x32{{1, 2, 3, 4}});
  EXPECT_EQ(to<std::uint64_t>(v, DType::U64), 0x0000000200000001u);
  EXPECT_EQ(to<std::int32_t>(v, DType::I32), 1);
  EXPECT_EQ(to<double>(v, DType::F64), 8589934593.0);
  const Value ones = Value::of(Uint4x32{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}});
  EXPECT_EQ(to<std::int64_t>(ones, DType::I64), -1);
  EXPECT_EQ(to<float>(ones, DType::F32), 0x1p64f);  // from u64, not i64
  EXPECT_EQ(to<std::uint8_t>(ones, DType::U8), 255);
}

TEST(Conversions, Constants) {
  EXPECT_EQ(constant_value(0.1, DType::F32).get<float>(), 0.1f);
  EXPECT_EQ(constant_value(-1.0, DType::U4x32).get<Uint4x32>(),
            (Uint4x32{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}));
  EXPECT_EQ(constant_bits_value(-1, DType::U64).get<std::uint64_t>(),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(constant_bits_value((std::int64_t{1} << 62) + 1, DType::F64).get<double>(), 0x1p62);
  EXPECT_EQ(constant_bits_value(std::int64_t{0x123456789}, DType::U4x32).get<Uint4x32>(),
            (Uint4x32{{0x23456789, 1, 0, 0}}));
  EXPECT_EQ(constant_value(1.0, DType::BF16).dtype, DType::BF16);
}

TEST(Storage, RoundTripsEveryDtype) {
  std::vector<std::byte> buffer(32);
  for (DType t : ir::kAllDTypes) {
    const Value v = constant_value(3, t);
    store_element(t, buffer, 1, v);
    EXPECT_TRUE(bit_equal(load_element(t, buffer, 1), v)) << ir::dtype_name(t);
  }
  store_element(DType::BF16, buffer, 0, Value::narrow(DType::BF16, 1.0f));
  std::uint16_t bits;
  std::memcpy(&bits, buffer.data(), 2);
  EXPECT_EQ(bits, 0x3F80);
  EXPECT_THROW(store_element(DType::F32, buffer, 0, Value::of(1.0)), InternalError);
  EXPECT_THROW(load_element(DType::U4x32, buffer, 2), InternalError);
}

}  // namespace
}  // namespace cannl::interp
