// Launch geometry of GPU kernels: positional slots, launch extents as maxima, serial kernels.
#include "cannl/ir/kernel_geometry.h"

#include <gtest/gtest.h>

#include "cannl/support/error.h"

namespace cannl::ir {
namespace {

AxisIndex it(Symbol s) { return AxisIndex::iterator(s); }

TEST(KernelGeometry, InnermostLoopOfAKindBindsSlotZero) {
  const NodeRef c = make_node("c", DType::F32, {64, 300});
  const Symbol i = fresh_symbol(), jo = fresh_symbol(), ji = fresh_symbol();
  // c[i, jo*256 + ji]: i and jo blocks, ji threads.
  AxisIndex col = it(ji);
  col.terms.push_back({256, jo});
  const StmtRef body = for_loop(
      i, 0, 64,
      for_loop(jo, 0, 2, for_loop(ji, 0, 256, set(c, {it(i), col}, constant(1, DType::F32)), AxisType::Workgroup),
               AxisType::Grid),
      AxisType::Grid);
  const KernelGeometry g = kernel_geometry(body);
  EXPECT_EQ(g.grid, (std::array<std::int64_t, 3>{2, 64, 1}));
  EXPECT_EQ(g.block, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(g.slot_of.at(jo.id), 0);
  EXPECT_EQ(g.slot_of.at(i.id), 1);
  EXPECT_EQ(g.slot_of.at(ji.id), 0);
  EXPECT_EQ(g.threads_per_block(), 256);
  EXPECT_FALSE(g.serial());
}

// A blocked tile is a launch: its blocks on Grid slot 0 (ceil(rows / bm) * ceil(cols / bn)), its
// threads on Workgroup slot 0, its staged slices in shared memory; a Grid loop around it slot 1.
TEST(KernelGeometry, BlockedTileBindsSlotZeroAndStagesItsSlices) {
  const NodeRef a = make_node("a", DType::F32, {3, 100, 20}), b = make_node("b", DType::F32, {20, 70});
  const NodeRef d = make_node("d", DType::F32, {3, 100, 70});
  const Symbol n = fresh_symbol(), i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  TileMma t;
  t.d = {d, {it(n), it(i), it(j)}};
  t.a = {a, {it(n), it(i), it(k)}};
  t.b = {b, {it(k), it(j)}};
  t.i = {i, 0, 100};
  t.j = {j, 0, 70};
  t.k = {k, 0, 20};
  t.fallback = comment("the nest");
  t.blocking = {64, 32, 8, 4, 2};
  const StmtRef body = for_loop(n, 0, 3, tile_mma(t), AxisType::Grid);
  const KernelGeometry g = kernel_geometry(body);
  EXPECT_EQ(g.grid, (std::array<std::int64_t, 3>{2 * 3, 3, 1}));
  EXPECT_EQ(g.block, (std::array<std::int64_t, 3>{16 * 16, 1, 1}));
  EXPECT_EQ(g.slot_of.at(n.id), 1);
  EXPECT_EQ(g.shared_bytes, (65 + 33) * 8 * 4);
  t.blocking = {};
  EXPECT_TRUE(kernel_geometry(tile_mma(t)).serial());  // unblocked: its fallback runs
}

TEST(KernelGeometry, SiblingNestsShareASlotAtTheirLargestExtent) {
  const NodeRef a = make_node("a", DType::F32, {100});
  const NodeRef b = make_node("b", DType::F32, {40});
  const Symbol i = fresh_symbol(), j = fresh_symbol(), k = fresh_symbol();
  const StmtRef body =
      seq({for_loop(i, 0, 100, set(a, {it(i)}, constant(1, DType::F32)), AxisType::Workgroup),
           for_loop(j, 0, 40, set(b, {it(j)}, constant(2, DType::F32)), AxisType::Workgroup),
           for_loop(k, 0, 7, set(b, {AxisIndex::fixed(0)}, constant(3, DType::F32)))});
  const KernelGeometry g = kernel_geometry(body);
  EXPECT_EQ(g.block[0], 100);
  EXPECT_EQ(g.grid[0], 1);
  EXPECT_EQ(g.slot_of.at(j.id), 0);
  EXPECT_FALSE(g.slot_of.contains(k.id));  // serial loops bind nothing
}

TEST(KernelGeometry, UnannotatedCodeIsOneThread) {
  const NodeRef a = make_node("a", DType::F32, {8});
  const Symbol i = fresh_symbol();
  const KernelGeometry g = kernel_geometry(for_loop(i, 0, 8, set(a, {it(i)}, constant(1, DType::F32))));
  EXPECT_TRUE(g.serial());
  EXPECT_TRUE(g.slot_of.empty());
}

TEST(KernelGeometry, FourNestedGridLoopsAreAnInternalError) {
  const NodeRef a = make_node("a", DType::F32, {2, 2, 2, 2});
  std::vector<Symbol> s = {fresh_symbol(), fresh_symbol(), fresh_symbol(), fresh_symbol()};
  StmtRef body = set(a, {it(s[0]), it(s[1]), it(s[2]), it(s[3])}, constant(1, DType::F32));
  for (int k = 3; k >= 0; --k) body = for_loop(s[static_cast<std::size_t>(k)], 0, 2, body, AxisType::Grid);
  EXPECT_THROW(kernel_geometry(body), InternalError);
}

}  // namespace
}  // namespace cannl::ir
