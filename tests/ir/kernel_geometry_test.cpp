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
