// Interval analysis (src/opt/interval.*): ranges from loop extents, statics and dtype ranges,
// arithmetic kept exact, conversions, and comparisons decided by ranges.
#include <gtest/gtest.h>

#include <limits>

#include "opt/interval.h"

namespace cannl::opt {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::Op;

ir::ScalarRef idx(ir::Symbol s) { return ir::embed_index(AxisIndex::iterator(s)); }
ir::ScalarRef f32(double v) { return ir::constant(v, DType::F32); }

TEST(Interval, AffineIndexFromLoopExtents) {
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  SymbolRanges r;
  r.bind(i, 0, 3);
  r.bind(j, 1, 2);
  EXPECT_EQ(index_interval(AxisIndex{{{2, i}}, 1}, r), (Interval{1, 7, true}));
  EXPECT_EQ(index_interval(AxisIndex{{{-1, i}, {3, j}}, 0}, r), (Interval{0, 6, true}));
  EXPECT_EQ(index_interval(AxisIndex::fixed(4), r), (Interval{4, 4, true}));
  EXPECT_EQ(index_interval(AxisIndex::iterator(ir::fresh_symbol()), r), std::nullopt);  // unbound
  r.unbind(i);
  EXPECT_EQ(r.of(i), std::nullopt);
  // Huge coefficients are not tracked (2^53 exactness).
  r.bind(i, 0, 1LL << 40);
  EXPECT_EQ(index_interval(AxisIndex{{{1LL << 20, i}}, 0}, r), std::nullopt);
}

TEST(Interval, StaticsWithARangeAreBound) {
  const ir::Symbol s = ir::fresh_symbol(), u = ir::fresh_symbol();
  const auto r = SymbolRanges::of_statics({ir::StaticSymbol{s, 10, "batch"}, ir::StaticSymbol{u, 0, "step"}});
  EXPECT_EQ(r.of(s), (Interval{0, 9, true}));
  EXPECT_EQ(r.of(u), std::nullopt);  // no declared range
}

TEST(Interval, DtypeRanges) {
  EXPECT_EQ(dtype_interval(DType::U8), (Interval{0, 255, true}));
  EXPECT_EQ(dtype_interval(DType::I32), (Interval{-2147483648.0, 2147483647.0, true}));
  EXPECT_EQ(dtype_interval(DType::F32), std::nullopt);  // may be NaN
  EXPECT_EQ(dtype_interval(DType::U4x32), std::nullopt);
  auto u8 = ir::make_node("u", DType::U8, {4});
  EXPECT_EQ(scalar_interval(ir::get(u8, {AxisIndex::fixed(0)}), {}), (Interval{0, 255, true}));
  auto f = ir::make_node("f", DType::F32, {4});
  EXPECT_EQ(scalar_interval(ir::get(f, {AxisIndex::fixed(0)}), {}), std::nullopt);
}

TEST(Interval, ArithmeticOnIndices) {
  const ir::Symbol i = ir::fresh_symbol();
  SymbolRanges r;
  r.bind(i, 0, 9);
  const auto x = ir::apply(Op::Identity, DType::F32, {idx(i)});
  EXPECT_EQ(scalar_interval(x, r), (Interval{0, 9, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Sub, DType::F32, {f32(3), x}), r), (Interval{-6, 3, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Mul, DType::F32, {x, f32(-2)}), r), (Interval{-18, 0, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Relu, DType::F32, {ir::apply(Op::Sub, DType::F32, {x, f32(4)})}), r),
            (Interval{0, 5, true}));
  const auto i64 = idx(i);
  EXPECT_EQ(scalar_interval(ir::apply(Op::Div, DType::I64, {i64, ir::constant(4, DType::I64)}), r),
            (Interval{0, 2, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Mod, DType::I64, {i64, ir::constant(4, DType::I64)}), r),
            (Interval{0, 3, true}));
  // Fractional f32 values are not tracked (rounding could leave the range).
  EXPECT_EQ(scalar_interval(ir::apply(Op::Mul, DType::F32, {x, f32(0.1)}), r), std::nullopt);
  // Beyond 2^24, f32 integers are not exact.
  r.bind(i, 0, 1LL << 30);
  EXPECT_EQ(scalar_interval(ir::apply(Op::Identity, DType::F32, {idx(i)}), r),
            (Interval{0, 1073741824.0, true}));  // monotone conversion: endpoints convert
  EXPECT_EQ(scalar_interval(ir::apply(Op::Add, DType::F32, {ir::apply(Op::Identity, DType::F32, {idx(i)}), f32(1)}), r),
            std::nullopt);
}

// i + (2^53 - 1) for i in [0, 2] reaches 2^53 + 1, whose f64 bound rounds to 2^53: the range
// must not end there, or 2^53 < i + (2^53 - 1) is decided false where it holds at i = 2.
TEST(Interval, IntegerBoundsRoundedInF64AreNotTrusted) {
  const ir::Symbol i = ir::fresh_symbol();
  SymbolRanges r;
  r.bind(i, 0, 2);
  const auto two53 = [](std::int64_t d) { return ir::constant_bits((std::int64_t{1} << 53) + d, DType::I64); };
  const auto sum = ir::apply(Op::Add, DType::I64, {idx(i), two53(-1)});
  const auto iv = scalar_interval(sum, r);
  ASSERT_TRUE(iv);
  EXPECT_GT(iv->hi, 9007199254740992.0);
  const auto at = scalar_interval(two53(0), r);
  ASSERT_TRUE(at);
  EXPECT_EQ(decide_comparison(Op::Cmplt, *at, *iv), std::nullopt);
}

TEST(Interval, IntegerWrapGivesTheFullRange) {
  const ir::Symbol i = ir::fresh_symbol();
  SymbolRanges r;
  r.bind(i, 0, 300);
  EXPECT_EQ(scalar_interval(ir::apply(Op::Identity, DType::U8, {idx(i)}), r), (Interval{0, 255, true}));
  r.bind(i, 0, 200);
  EXPECT_EQ(scalar_interval(ir::apply(Op::Identity, DType::U8, {idx(i)}), r), (Interval{0, 200, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Add, DType::U8, {ir::apply(Op::Identity, DType::U8, {idx(i)}),
                                                            ir::constant(100, DType::U8)}), r),
            (Interval{0, 255, true}));  // may wrap
  EXPECT_EQ(convert_interval(Interval{-5, 5, true}, DType::I64, DType::U32), (Interval{0, 4294967295.0, true}));
  EXPECT_EQ(convert_interval(Interval{2, 5, true}, DType::I64, DType::U32), (Interval{2, 5, true}));
  EXPECT_EQ(convert_interval(Interval{2, 5, true}, DType::I64, DType::U4x32), std::nullopt);
}

TEST(Interval, PredicatesAndWhere) {
  auto f = ir::make_node("f", DType::F32, {2});
  const auto any = ir::get(f, {AxisIndex::fixed(0)});
  EXPECT_EQ(scalar_interval(ir::apply(Op::Cmplt, DType::F32, {any, any}), {}), (Interval{0, 1, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Where, DType::F32, {any, f32(2), f32(-1)}), {}), (Interval{-1, 2, true}));
  EXPECT_EQ(scalar_interval(ir::apply(Op::Where, DType::F32, {any, any, f32(-1)}), {}), std::nullopt);
  EXPECT_EQ(scalar_interval(f32(std::numeric_limits<double>::quiet_NaN()), {}), std::nullopt);
  EXPECT_EQ(scalar_interval(f32(0.5), {}), (Interval{0.5, 0.5, false}));
}

TEST(Interval, DecidedComparisons) {
  EXPECT_EQ(decide_comparison(Op::Cmplt, {0, 3, true}, {4, 9, true}), 1);
  EXPECT_EQ(decide_comparison(Op::Cmplt, {4, 9, true}, {0, 4, true}), 0);
  EXPECT_EQ(decide_comparison(Op::Cmplt, {0, 4, true}, {4, 9, true}), std::nullopt);
  EXPECT_EQ(decide_comparison(Op::Cmpeq, {0, 3, true}, {4, 9, true}), 0);
  EXPECT_EQ(decide_comparison(Op::Cmpne, {0, 3, true}, {4, 9, true}), 1);
  EXPECT_EQ(decide_comparison(Op::Cmpeq, {2, 2, true}, {2, 2, true}), 1);
  EXPECT_EQ(decide_comparison(Op::Cmpeq, {2, 3, true}, {2, 2, true}), std::nullopt);
  EXPECT_EQ(decide_comparison(Op::Add, {0, 1, true}, {5, 6, true}), std::nullopt);
}

TEST(Interval, LoopBoundGuardIsDecided) {
  // for i in [0, 4): i < 4 always holds; i < 3 does not.
  const ir::Symbol i = ir::fresh_symbol();
  SymbolRanges r;
  r.bind(i, 0, 3);
  const auto iv = index_interval(AxisIndex::iterator(i), r);
  ASSERT_TRUE(iv);
  EXPECT_EQ(decide_comparison(Op::Cmplt, *iv, Interval{4, 4, true}), 1);
  EXPECT_EQ(decide_comparison(Op::Cmplt, *iv, Interval{3, 3, true}), std::nullopt);
}

}  // namespace
}  // namespace cannl::opt
