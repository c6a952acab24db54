// Structure of lowered fetches (src/ir/lower_fetch.cpp, lower_cells.cpp).
#include <gtest/gtest.h>

#include "cannl/ir/verify.h"
#include "cannl/support/error.h"
#include "ir_test_util.h"

namespace cannl::ir {
namespace {

using testing::lowered_text;

std::string fetched(NodeRef n, FetchOp op) { return lowered_text(Comp{{make_fetch(n, op)}, {}}); }

TEST(LowerFetch, ZeroConstantIsZeroOut) {
  EXPECT_EQ(fetched(make_node("x", DType::F32, {2, 3}), FetchConstant{0}), "zero_out x\n");
}

TEST(LowerFetch, ConstantLoopsOverCells) {
  EXPECT_EQ(fetched(make_node("x", DType::F16, {2, 3}), FetchConstant{2.5}),
            "for i0 in [0, 2):\n"
            "  for i1 in [0, 3):\n"
            "    x[i0, i1] = 2.5\n");
  EXPECT_EQ(fetched(make_node("s", DType::F64, {}), FetchConstant{1}), "s = 1:f64\n");
}

TEST(LowerFetch, PaddedNodeGetsItsPadValueInTheMargins) {
  auto x = make_node("x", DType::F32, {5});
  x->padding = {{1, 1}};
  x->pad_value = 7.0;
  EXPECT_EQ(fetched(x, FetchConstant{1}),
            "x[0] = 7\n"
            "x[4] = 7\n"
            "for i0 in [0, 3):\n"
            "  x[i0 + 1] = 1\n");
  EXPECT_EQ(fetched(x, FetchConstant{0}),
            "x[0] = 7\n"
            "x[4] = 7\n"
            "for i0 in [0, 3):\n"
            "  x[i0 + 1] = 0\n");
  x->pad_value = 0.0;
  EXPECT_EQ(fetched(x, FetchConstant{0}), "zero_out x\n");
}

TEST(LowerFetch, TwoDimensionalMarginsAreDisjoint) {
  auto x = make_node("x", DType::F32, {4, 5});
  x->padding = {{1, 1}, {2, 0}};
  x->pad_value = -1.0;
  EXPECT_EQ(fetched(x, FetchConstant{3}),
            "for i0 in [0, 5):\n"
            "  x[0, i0] = -1\n"
            "for i1 in [0, 5):\n"
            "  x[3, i1] = -1\n"
            "for i2 in [1, 3):\n"
            "  for i3 in [0, 2):\n"
            "    x[i2, i3] = -1\n"
            "for i4 in [0, 2):\n"
            "  for i5 in [0, 3):\n"
            "    x[i4 + 1, i5 + 2] = 3\n");
}

TEST(LowerFetch, ConstantBits) {
  EXPECT_EQ(fetched(make_node("key", DType::U4x32, {2}), FetchConstantBits{42}),
            "for i0 in [0, 2):\n"
            "  key[i0] = bits(42)\n");
}

TEST(LowerFetch, ConstantFillIsUnrolled) {
  EXPECT_EQ(fetched(make_node("x", DType::F32, {2, 2}), FetchConstantFill{{1, 2, 3, 4.5}}),
            "x[0, 0] = 1\n"
            "x[0, 1] = 2\n"
            "x[1, 0] = 3\n"
            "x[1, 1] = 4.5\n");
}

TEST(LowerFetch, ConstantFillOfWrongSizeIsAnInternalError) {
  try {
    fetched(make_node("x", DType::F32, {2, 2}), FetchConstantFill{{1, 2, 3}});
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("3 values for 4 cells of x"), std::string::npos)
        << e.what();
  }
}

TEST(LowerFetch, RangeOverOffsetsUsesLogicalRowMajorOffsets) {
  auto x = make_node("x", DType::I32, {4, 3});
  x->padding = {{1, 1}, {0, 0}};
  EXPECT_EQ(fetched(x, FetchRangeOverOffsets{}),
            "for i0 in [0, 2):\n"
            "  for i1 in [0, 3):\n"
            "    x[i0 + 1, i1] = index(3*i0 + i1)\n");
}

TEST(LowerFetch, SliceCopiesTheParentRowAtTheStaticIndex) {
  auto data = make_node("data", DType::F32, {10, 3}), x = make_node("x", DType::F32, {3});
  const StaticSymbol batch{fresh_symbol(), 10, "batch"};
  Comp comp{{make_fetch(x, FetchSlice{batch, data})}, {batch}};
  const auto routine = lower(comp, "load");
  EXPECT_NO_THROW(verify(routine));
  EXPECT_EQ(print_loop_ir(routine),
            "# load (statics: batch)\n"
            "for i0 in [0, 3):\n"
            "  x[i0] = data[batch, i0]   # x := slice(data, batch)\n");
  auto wrong = make_node("w", DType::F32, {3, 1});
  EXPECT_THROW(lower(Comp{{make_fetch(wrong, FetchSlice{batch, data})}, {batch}}, "r"),
               InternalError);
}

TEST(LowerFetch, EmbedSymbol) {
  const StaticSymbol step{fresh_symbol(), 0, "step"};
  Comp comp{{make_fetch(make_node("t", DType::I64, {}), FetchEmbedSymbol{step})}, {step}};
  EXPECT_EQ(testing::strip_comments(print_loop_ir(lower(comp, "r"))),
            "# r (statics: step)\n"
            "t = index(step)\n");
}

}  // namespace
}  // namespace cannl::ir
