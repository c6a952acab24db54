// Sasha Rush's tensor puzzles written in the extended einsum notation (the ones a shape-level
// check can express): the inferred shapes and, for the index-moving ones, the projections.
// Their values are checked end to end by tests/apps/einsum_command.sh.

#include "shape/test_util.h"

namespace cannl::shape::testing {
namespace {

class Puzzle : public ShapeTest {};

ShapeRef vec(const std::string& name, Dims output) {
  return leaf(name, {.batch = {{}}, .input = {{}}, .output = output});
}
ShapeRef result_with(const std::string& spec, std::vector<ShapeRef> ops, Dims output, int* step = nullptr) {
  return op("r", Einsum{spec}, std::move(ops), step, {.batch = {{}}, .input = {{}}, .output = output});
}
Dims out(const ShapeRef& s) {
  finish_inference();
  return row_dims(*s, RowKind::Output);
}

TEST_F(Puzzle, P02Sum) { EXPECT_EQ(out(einsum("|->i => |->", {vec("a", {5})})), (Dims{})); }
TEST_F(Puzzle, P03Outer) { EXPECT_EQ(out(einsum("i; j => i, j", {vec("a", {3}), vec("b", {4})})), (Dims{3, 4})); }
TEST_F(Puzzle, P04Diag) { EXPECT_EQ(out(einsum("ii => i", {vec("a", {4, 4})})), (Dims{4})); }
TEST_F(Puzzle, P05Eye) { EXPECT_EQ(out(einsum("i => ii", {vec("ones", {4})})), (Dims{4, 4})); }
TEST_F(Puzzle, P06Triu) { EXPECT_EQ(out(einsum("i; j => ij", {vec("r", {3}), vec("s", {3})})), (Dims{3, 3})); }
TEST_F(Puzzle, P07Cumsum) { EXPECT_EQ(out(einsum("ij; j => i", {vec("tri", {5, 5}), vec("a", {5})})), (Dims{5})); }
TEST_F(Puzzle, P08DiffShift) { EXPECT_EQ(out(einsum("1^i => i", {vec("a", {6})})), (Dims{5})); }
TEST_F(Puzzle, P08DiffPrefix) { EXPECT_EQ(out(einsum("i^1 => i", {vec("a", {6})})), (Dims{5})); }
TEST_F(Puzzle, P09Vstack) {
  EXPECT_EQ(out(einsum("a, i; b, i => a^b, i", {vec("x", {1, 4}), vec("y", {1, 4})})), (Dims{2, 4}));
}
TEST_F(Puzzle, P10Roll) {
  // the second operand only gives |a| (the roll amount)
  EXPECT_EQ(out(einsum("a^b; a => b^a", {vec("x", {5}), vec("amount", {2})})), (Dims{5}));
}
TEST_F(Puzzle, P13PadTo) { EXPECT_EQ(out(result_with("i => i^p", {vec("a", {3})}, {7})), (Dims{7})); }
TEST_F(Puzzle, P14SequenceMask) {
  EXPECT_EQ(out(einsum("i, j; i => i, j", {vec("v", {3, 4}), vec("len", {3})})), (Dims{3, 4}));
}
TEST_F(Puzzle, P17FlattenWithSelector) {
  EXPECT_EQ(out(einsum("i, j; i, j, k => k", {vec("a", {2, 3}), vec("sel", {2, 3, 6})})), (Dims{6}));
}
TEST_F(Puzzle, P18Linspace) { EXPECT_EQ(out(einsum("i; |->0 => i", {vec("r", {5}), vec("step", {1})})), (Dims{5})); }
TEST_F(Puzzle, P20Repeat) { EXPECT_EQ(out(result_with("i => r, i", {vec("a", {3})}, {4, 3})), (Dims{4, 3})); }
TEST_F(Puzzle, MatmulTransposeBatched) {
  EXPECT_EQ(out(einsum("ij; jk => ik", {vec("a", {2, 3}), vec("b", {3, 4})})), (Dims{2, 4}));
  auto b = leaf("b", {.batch = {{5}}, .input = {{}}, .output = {{2, 3}}});
  auto c = leaf("c", {.batch = {{5}}, .input = {{}}, .output = {{3, 4}}});
  auto r = einsum("b|ij; b|jk => b|ik", {b, c});
  finish_inference();
  EXPECT_EQ(dims(*r), (Dims{5, 2, 4}));
  EXPECT_EQ(out(einsum("ij => ji", {vec("t", {2, 3})})), (Dims{3, 2}));
}

TEST_F(Puzzle, RollProjectionsAreTwoBlocks) {
  int step = -1;
  einsum("a^b; a => b^a", {vec("x", {5}), vec("amount", {1})}, &step);
  finish_inference();
  const auto blocks = block_projections(step);
  ASSERT_EQ(blocks.size(), 2u);
  // blocks follow the parts of the result's axis: b writes b, reads |a| + b; a writes |b| + a
  EXPECT_EQ(blocks[0].projections.project_lhs[0].offset, 0);
  EXPECT_EQ(blocks[0].projections.project_rhs[0][0].offset, 1);
  EXPECT_EQ(blocks[0].live_rhs, (std::vector<bool>{true, false}));
  EXPECT_EQ(blocks[1].projections.project_lhs[0].offset, 4);
  EXPECT_EQ(blocks[1].projections.project_rhs[0][0].offset, 0);
}

}  // namespace
}  // namespace cannl::shape::testing
