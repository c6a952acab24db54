// Every op of ops.def in f32, f64, i32 and u8 against hand-computed values, plus the integer
// edge cases (wrap, division by zero, INT_MIN / -1) and the argument-conversion rules of Apply.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "cannl/interp/scalar_semantics.h"
#include "cannl/support/error.h"

namespace cannl::interp {
namespace {

using ir::DType;
using ir::Op;

// One op application: arguments and expected result as doubles, converted to the row's dtype
// (all chosen exactly representable in every dtype the row runs in).
struct Row {
  Op op;
  std::vector<double> args;
  double expected;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Fma's fused rounding: in f32, a*b rounds to 1 + 2^-11 (a tie, to even), so an unfused a*b+c
// would give 0; fused keeps the 2^-24. Exact in f64.
const double kFmaA = 1 + 0x1p-12, kFmaC = -(1 + 0x1p-11);

const std::vector<Row> kFloatRows = {
    {Op::Identity, {2.5}, 2.5},
    {Op::Relu, {-3}, 0},
    {Op::Relu, {2}, 2},
    {Op::Relu, {kNan}, 0},
    {Op::Satur01, {1.5}, 1},
    {Op::Satur01, {-0.5}, 0},
    {Op::Satur01, {0.25}, 0.25},
    {Op::Exp, {0}, 1},
    {Op::Log, {1}, 0},
    {Op::Log, {0}, -kInf},
    {Op::Exp2, {3}, 8},
    {Op::Log2, {8}, 3},
    {Op::Sin, {0}, 0},
    {Op::Cos, {0}, 1},
    {Op::Sqrt, {2.25}, 1.5},
    {Op::Sqrt, {-1}, kNan},
    {Op::Recip, {4}, 0.25},
    {Op::Recip, {0}, kInf},
    {Op::RecipSqrt, {16}, 0.25},
    {Op::Neg, {2}, -2},
    {Op::Trunc, {-2.7}, -2},
    {Op::Trunc, {2.7}, 2},
    {Op::Tanh, {0}, 0},
    {Op::Not, {0}, 1},
    {Op::Not, {3}, 0},
    // Narrow roundings: below half an ulp, ties to even, overflow to infinity, subnormal ties.
    {Op::RoundBf16, {1 + 0x1p-9}, 1},
    {Op::RoundBf16, {1 + 3 * 0x1p-8}, 1 + 0x1p-6},
    {Op::RoundBf16, {-3}, -3},
    {Op::RoundBf16, {kNan}, kNan},
    {Op::RoundF16, {1 + 3 * 0x1p-11}, 1 + 0x1p-9},
    {Op::RoundF16, {65520}, kInf},
    {Op::RoundF16, {-0x1p-25}, -0.0},
    {Op::RoundF16, {0x1p-24}, 0x1p-24},
    {Op::RoundTf32, {1 + 0x1p-11}, 1},
    {Op::RoundTf32, {1 + 0x1p-11 + 0x1p-20}, 1 + 0x1p-10},
    // fp8 E5M2 keeps 2 mantissa bits and saturates finite values, as its store does.
    {Op::RoundFp8, {1.5625}, 1.5},
    {Op::RoundFp8, {1.875}, 2},
    {Op::RoundFp8, {1e9}, 57344},
    {Op::RoundFp8, {-kInf}, -kInf},
    {Op::Arg1, {1, 2}, 1},
    {Op::Arg2, {1, 2}, 2},
    {Op::Add, {1.5, 2.25}, 3.75},
    {Op::Sub, {1, 2.5}, -1.5},
    {Op::Mul, {1.5, -2}, -3},
    {Op::Div, {1, 4}, 0.25},
    {Op::Div, {1, 0}, kInf},
    {Op::Pow, {2, 10}, 1024},
    {Op::Pow, {4, 0.5}, 2},
    {Op::ReluGate, {0.5, 3}, 3},
    {Op::ReluGate, {-1, 3}, 0},
    {Op::Satur01Gate, {0.5, 3}, 3},
    {Op::Satur01Gate, {1, 3}, 0},
    {Op::Satur01Gate, {0, 3}, 0},
    {Op::Max, {1, -2}, 1},
    {Op::Max, {kNan, 1}, 1},
    {Op::Min, {1, -2}, -2},
    {Op::Min, {kNan, 1}, 1},
    {Op::Mod, {7.5, 2}, 1.5},
    {Op::Mod, {-7.5, 2}, -1.5},
    {Op::Cmplt, {1, 2}, 1},
    {Op::Cmplt, {2, 1}, 0},
    {Op::Cmplt, {kNan, 1}, 0},
    {Op::Cmpeq, {2, 2}, 1},
    {Op::Cmpeq, {kNan, kNan}, 0},
    {Op::Cmpne, {2, 2}, 0},
    {Op::Cmpne, {kNan, kNan}, 1},
    {Op::Or, {0, 0}, 0},
    {Op::Or, {0, 5}, 1},
    {Op::And, {1, 0}, 0},
    {Op::And, {2, 3}, 1},
    {Op::Where, {0, 1, 2}, 2},
    {Op::Where, {1, 1, 2}, 1},
    {Op::Fma, {2, 3, 1}, 7},
    {Op::Fma, {kFmaA, kFmaA, kFmaC}, 0x1p-24},
    {Op::Mul3, {2, 3, 4}, 24},
};

const std::vector<Row> kIntRows = {
    {Op::Identity, {5}, 5},    {Op::Relu, {0}, 0},        {Op::Relu, {2}, 2},
    {Op::Satur01, {5}, 1},     {Op::Satur01, {0}, 0},     {Op::Satur01, {1}, 1},
    {Op::Trunc, {7}, 7},       {Op::Not, {0}, 1},         {Op::Not, {7}, 0},
    {Op::Arg1, {1, 2}, 1},     {Op::Arg2, {1, 2}, 2},     {Op::Add, {2, 3}, 5},
    {Op::Sub, {5, 3}, 2},      {Op::Mul, {6, 7}, 42},     {Op::Div, {7, 2}, 3},
    {Op::Div, {7, 0}, 0},      {Op::Mod, {7, 3}, 1},      {Op::Mod, {7, 0}, 0},
    {Op::ReluGate, {1, 5}, 5}, {Op::ReluGate, {0, 5}, 0}, {Op::Satur01Gate, {1, 5}, 0},
    {Op::Max, {1, 4}, 4},      {Op::Min, {1, 4}, 1},      {Op::Cmplt, {1, 2}, 1},
    {Op::Cmplt, {2, 2}, 0},    {Op::Cmpeq, {2, 2}, 1},    {Op::Cmpne, {2, 2}, 0},
    {Op::Or, {0, 0}, 0},       {Op::Or, {3, 0}, 1},       {Op::And, {3, 0}, 0},
    {Op::And, {3, 4}, 1},      {Op::Where, {0, 1, 2}, 2}, {Op::Where, {9, 1, 2}, 1},
    {Op::Fma, {2, 3, 4}, 10},  {Op::Mul3, {2, 3, 4}, 24},
};

// Signed-only rows (negative operands), for i32.
const std::vector<Row> kSignedRows = {
    {Op::Relu, {-3}, 0},     {Op::Satur01, {-5}, 0},  {Op::Neg, {5}, -5},
    {Op::Div, {-7, 2}, -3},  {Op::Mod, {-7, 3}, -1},  {Op::Mod, {7, -3}, 1},
    {Op::Max, {-1, -4}, -1}, {Op::Cmplt, {-1, 0}, 1},
};

bool matches(const Value& got, const Value& want) {
  if (got.dtype == DType::F32 && std::isnan(want.get<float>())) return std::isnan(got.get<float>());
  if (got.dtype == DType::F64 && std::isnan(want.get<double>()))
    return std::isnan(got.get<double>());
  return bit_equal(got, want);
}

void check_rows(const std::vector<Row>& rows, DType dtype) {
  for (const Row& row : rows) {
    std::vector<Value> args;
    for (double a : row.args) args.push_back(constant_value(a, dtype));
    const Value got = apply_op(row.op, dtype, args);
    const Value want = constant_value(row.expected, dtype);
    EXPECT_TRUE(matches(got, want)) << ir::op_name(row.op) << " in " << ir::dtype_name(dtype)
                                    << ": got " << to_string(got) << ", want " << to_string(want);
  }
}

TEST(OpTable, FloatRowsInF32AndF64) {
  check_rows(kFloatRows, DType::F32);
  check_rows(kFloatRows, DType::F64);
}

TEST(OpTable, IntegerRowsInI32AndU8) {
  check_rows(kIntRows, DType::I32);
  check_rows(kSignedRows, DType::I32);
  check_rows(kIntRows, DType::U8);
  check_rows(kIntRows, DType::I64);
  check_rows(kIntRows, DType::U32);
  check_rows(kIntRows, DType::U64);
}

// The table must mention every op computed on plain numbers, so a new ops.def row needs a test.
TEST(OpTable, EveryNumericOpHasAFloatRow) {
  std::set<Op> covered;
  for (const Row& row : kFloatRows) covered.insert(row.op);
  for (int k = 0; k < ir::kOpCount; ++k) {
    const Op op = static_cast<Op>(k);
    if (op == Op::Uniform1 || op == Op::ThreefryCrypto || op == Op::ThreefryLight) continue;
    EXPECT_TRUE(covered.count(op)) << "no float row for " << ir::op_name(op);
  }
}

TEST(OpTable, F32ComputesInSinglePrecision) {
  const Value args[] = {Value::of(1e8f), Value::of(1.0f)};
  EXPECT_EQ(apply_op(Op::Add, DType::F32, args).get<float>(), 1e8f);
  EXPECT_EQ(apply_op(Op::Add, DType::F64, args).get<double>(), 100000001.0);
  // expf(1) is e rounded to f32.
  const Value one[] = {Value::of(1.0f)};
  EXPECT_EQ(apply_op(Op::Exp, DType::F32, one).get<float>(), ::expf(1.0f));
}

Value i32(std::int32_t x) { return Value::of(x); }
Value u8(int x) { return Value::of(static_cast<std::uint8_t>(x)); }

template <class T>
T apply2(Op op, DType dtype, Value a, Value b) {
  const Value args[] = {a, b};
  return apply_op(op, dtype, args).get<T>();
}

TEST(IntegerEdges, I32WrapsAndDivisionIsTotal) {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  EXPECT_EQ(apply2<std::int32_t>(Op::Add, DType::I32, i32(kMax), i32(1)), kMin);
  EXPECT_EQ(apply2<std::int32_t>(Op::Sub, DType::I32, i32(kMin), i32(1)), kMax);
  EXPECT_EQ(apply2<std::int32_t>(Op::Mul, DType::I32, i32(65536), i32(65536)), 0);
  EXPECT_EQ(apply2<std::int32_t>(Op::Mul, DType::I32, i32(kMax), i32(2)), -2);
  EXPECT_EQ(apply2<std::int32_t>(Op::Div, DType::I32, i32(kMin), i32(-1)), kMin);
  EXPECT_EQ(apply2<std::int32_t>(Op::Mod, DType::I32, i32(kMin), i32(-1)), 0);
  EXPECT_EQ(apply2<std::int32_t>(Op::Div, DType::I32, i32(kMin), i32(0)), 0);
  EXPECT_EQ(apply2<std::int32_t>(Op::Mod, DType::I32, i32(-5), i32(0)), 0);
  const Value min_arg[] = {i32(kMin)};
  EXPECT_EQ(apply_op(Op::Neg, DType::I32, min_arg).get<std::int32_t>(), kMin);
  const Value fma_args[] = {i32(kMax), i32(2), i32(3)};
  EXPECT_EQ(apply_op(Op::Fma, DType::I32, fma_args).get<std::int32_t>(), 1);
  EXPECT_EQ(apply_op(Op::Mul3, DType::I32, fma_args).get<std::int32_t>(), -6);
}

TEST(IntegerEdges, U8WrapsToEightBits) {
  EXPECT_EQ(apply2<std::uint8_t>(Op::Add, DType::U8, u8(200), u8(100)), 44);
  EXPECT_EQ(apply2<std::uint8_t>(Op::Sub, DType::U8, u8(1), u8(2)), 255);
  EXPECT_EQ(apply2<std::uint8_t>(Op::Mul, DType::U8, u8(16), u8(16)), 0);
  EXPECT_EQ(apply2<std::uint8_t>(Op::Div, DType::U8, u8(255), u8(0)), 0);
  EXPECT_EQ(apply2<std::uint8_t>(Op::Mod, DType::U8, u8(255), u8(7)), 3);
  EXPECT_EQ(apply2<std::uint8_t>(Op::Cmplt, DType::U8, u8(255), u8(1)), 0);
  const Value one[] = {u8(1)};
  EXPECT_EQ(apply_op(Op::Neg, DType::U8, one).get<std::uint8_t>(), 255);
  EXPECT_EQ(apply_op(Op::Relu, DType::U8, one).get<std::uint8_t>(), 1);
}

TEST(IntegerEdges, WideTypesWrap) {
  constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();
  const Value max64 = Value::of(std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(apply2<std::int64_t>(Op::Add, DType::I64, max64, Value::of(std::int64_t{1})), kMin64);
  EXPECT_EQ(
      apply2<std::int64_t>(Op::Div, DType::I64, Value::of(kMin64), Value::of(std::int64_t{-1})),
      kMin64);
  EXPECT_EQ(apply2<std::uint32_t>(Op::Sub, DType::U32, Value::of(0u), Value::of(1u)), 0xFFFFFFFFu);
  const Value big = Value::of(std::uint64_t{1} << 63);
  EXPECT_EQ(apply2<std::uint64_t>(Op::Mul, DType::U64, big, Value::of(std::uint64_t{2})), 0u);
  EXPECT_EQ(apply2<std::uint64_t>(Op::Div, DType::U64, big, Value::of(std::uint64_t{0})), 0u);
  // Unsigned comparison: 2^63 is large, not negative.
  EXPECT_EQ(apply2<std::uint64_t>(Op::Cmplt, DType::U64, Value::of(std::uint64_t{1}), big), 1u);
}

TEST(IntegerEdges, TranscendentalsAreUndefinedForIntegers) {
  for (Op op : {Op::Exp, Op::Log, Op::Exp2, Op::Log2, Op::Sin, Op::Cos, Op::Sqrt, Op::Recip,
                Op::RecipSqrt, Op::Tanh}) {
    const Value arg[] = {i32(1)};
    EXPECT_THROW(apply_op(op, DType::I32, arg), InternalError) << ir::op_name(op);
  }
  try {
    apply2<std::int32_t>(Op::Pow, DType::U8, u8(2), u8(3));
    ADD_FAILURE() << "pow on u8 must throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("pow"), std::string::npos) << e.what();
  }
}

TEST(ApplyConversions, ArgumentsConvertToTheApplyDtype) {
  // i32 7 and f64 0.5 meet in an f32 Add: both converted to f32 first.
  EXPECT_EQ(apply2<float>(Op::Add, DType::F32, i32(7), Value::of(0.5)), 7.5f);
  // f32 2.9 converted to i32 is 2 (truncation) before multiplying.
  EXPECT_EQ(apply2<std::int32_t>(Op::Mul, DType::I32, Value::of(2.9f), i32(3)), 6);
  // Narrow Apply dtypes compute in f32, then round the result once to the narrow dtype.
  const Value narrow_args[] = {Value::narrow(DType::BF16, 1.0f), Value::of(0x1p-6f + 0x1p-9f)};
  const Value r = apply_op(Op::Add, DType::BF16, narrow_args);
  EXPECT_EQ(r.dtype, DType::BF16);
  EXPECT_EQ(r.get<float>(), 1.0f + 0x1p-6f);  // 1 + 2^-6 + 2^-9 has no bf16 form
  const Value mul_args[] = {Value::narrow(DType::F16, 3.0f), Value::of(0.5)};
  EXPECT_TRUE(bit_equal(apply_op(Op::Mul, DType::F16, mul_args), Value::narrow(DType::F16, 1.5f)));
}

TEST(ApplyConversions, WhereTestsItsConditionInItsOwnDtype) {
  // f64 0.5 is nonzero, though it would truncate to i32 0.
  const Value args[] = {Value::of(0.5), i32(1), i32(2)};
  EXPECT_EQ(apply_op(Op::Where, DType::I32, args).get<std::int32_t>(), 1);
  const Value nan_cond[] = {Value::of(std::nanf("")), Value::of(1.0f), Value::of(2.0f)};
  EXPECT_EQ(apply_op(Op::Where, DType::F32, nan_cond).get<float>(), 1.0f);
  // The selected branch is converted to the Apply dtype.
  const Value mixed[] = {i32(0), Value::of(1.0), Value::of(2.75)};
  EXPECT_EQ(apply_op(Op::Where, DType::I32, mixed).get<std::int32_t>(), 2);
}

TEST(ApplyConversions, WhereRefusesAU4x32Condition) {
  const Value args[] = {Value::of(ir::Uint4x32{{1, 0, 0, 0}}), i32(1), i32(2)};
  try {
    apply_op(Op::Where, DType::I32, args);
    ADD_FAILURE() << "where on a u4x32 condition must throw";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("condition"), std::string::npos) << e.what();
  }
}

TEST(ApplyConversions, U4x32OnlyMovesValues) {
  const Value args[] = {i32(-1), Value::of(ir::Uint4x32{{1, 2, 3, 4}})};
  EXPECT_EQ(apply_op(Op::Arg2, DType::U4x32, args).get<ir::Uint4x32>(),
            (ir::Uint4x32{{1, 2, 3, 4}}));
  EXPECT_EQ(apply_op(Op::Arg1, DType::U4x32, args).get<ir::Uint4x32>(),
            (ir::Uint4x32{{0xFFFFFFFF, 0xFFFFFFFF, 0, 0}}));
  EXPECT_THROW(apply_op(Op::Add, DType::U4x32, args), InternalError);
}

TEST(ApplyConversions, WrongArityThrows) {
  const Value one[] = {i32(1)};
  EXPECT_THROW(apply_op(Op::Add, DType::I32, one), InternalError);
}

}  // namespace
}  // namespace cannl::interp
