// The tensor-core fragment tables (codegen/gpu/mma_fragments.h) against the PTX ISA: each
// table restated from the ISA's formulas lane by lane ("Matrix Fragments for mma.m16n8k16 with
// floating point type", "... for mma.m16n8k8" with .tf32, ldmatrix), a few cells read off the
// ISA's figures, and every fragment covering its matrix exactly once across the warp.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "codegen/gpu/mma_fragments.h"

namespace cannl::codegen {
namespace {

TEST(MmaFragments, M16N8K16FollowsThePtxFormulas) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane >> 2, thread = lane % 4;
    for (int i = 0; i < 8; ++i) {
      // row = groupID for ai where 0 <= i < 2 || 4 <= i < 6, groupID + 8 otherwise;
      // col = threadID_in_group * 2 + (i & 1), + 8 for i >= 4.
      const int row = (i < 2 || (i >= 4 && i < 6)) ? group : group + 8;
      const int col = thread * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      EXPECT_EQ(mma_a_cell(kM16N8K16, lane, i), (FragmentCell{row, col})) << "lane " << lane << " a" << i;
    }
    for (int i = 0; i < 4; ++i) {
      // row = threadID_in_group * 2 + (i & 1), + 8 for i >= 2; col = groupID.
      EXPECT_EQ(mma_b_cell(kM16N8K16, lane, i), (FragmentCell{thread * 2 + (i & 1) + (i >= 2 ? 8 : 0), group}))
          << "lane " << lane << " b" << i;
      // row = groupID for i < 2, groupID + 8 otherwise; col = threadID_in_group * 2 + (i & 1).
      EXPECT_EQ(mma_c_cell(kM16N8K16, lane, i), (FragmentCell{i < 2 ? group : group + 8, thread * 2 + (i & 1)}))
          << "lane " << lane << " c" << i;
    }
  }
  // Figure "MMA .m16n8k16 fragment layout for matrix A": T0 holds a0, a1 at row 0, columns 0 and
  // 1; T5 holds a6, a7 at row 9, columns 10 and 11; T31 holds a7 at row 15, column 15.
  EXPECT_EQ(mma_a_cell(kM16N8K16, 0, 1), (FragmentCell{0, 1}));
  EXPECT_EQ(mma_a_cell(kM16N8K16, 5, 6), (FragmentCell{9, 10}));
  EXPECT_EQ(mma_a_cell(kM16N8K16, 31, 7), (FragmentCell{15, 15}));
  EXPECT_EQ(mma_b_cell(kM16N8K16, 31, 3), (FragmentCell{15, 7}));
}

TEST(MmaFragments, M16N8K8Tf32FollowsThePtxFormulas) {
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane >> 2, thread = lane % 4;
    // A: row groupID for a0, a2, groupID + 8 for a1, a3; col threadID_in_group for a0, a1, + 4 for a2, a3.
    EXPECT_EQ(mma_a_cell(kM16N8K8, lane, 0), (FragmentCell{group, thread}));
    EXPECT_EQ(mma_a_cell(kM16N8K8, lane, 1), (FragmentCell{group + 8, thread}));
    EXPECT_EQ(mma_a_cell(kM16N8K8, lane, 2), (FragmentCell{group, thread + 4}));
    EXPECT_EQ(mma_a_cell(kM16N8K8, lane, 3), (FragmentCell{group + 8, thread + 4}));
    // B: row threadID_in_group for b0, + 4 for b1; col groupID.
    EXPECT_EQ(mma_b_cell(kM16N8K8, lane, 0), (FragmentCell{thread, group}));
    EXPECT_EQ(mma_b_cell(kM16N8K8, lane, 1), (FragmentCell{thread + 4, group}));
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(mma_c_cell(kM16N8K8, lane, i), mma_c_cell(kM16N8K16, lane, i)) << "the accumulators agree";
  }
}

// Across the warp, the fragment elements of each operand are a bijection onto its matrix.
TEST(MmaFragments, EveryFragmentCoversItsMatrixOnce) {
  for (const MmaShape& shape : {kM16N8K16, kM16N8K8}) {
    std::set<std::pair<int, int>> a, b, c;
    for (int lane = 0; lane < 32; ++lane) {
      for (int e = 0; e < shape.a_elements(); ++e) {
        const FragmentCell x = mma_a_cell(shape, lane, e);
        ASSERT_TRUE(x.row >= 0 && x.row < shape.m && x.col >= 0 && x.col < shape.k);
        a.insert({x.row, x.col});
      }
      for (int e = 0; e < shape.b_elements(); ++e) {
        const FragmentCell x = mma_b_cell(shape, lane, e);
        ASSERT_TRUE(x.row >= 0 && x.row < shape.k && x.col >= 0 && x.col < shape.n);
        b.insert({x.row, x.col});
      }
      for (int e = 0; e < shape.c_elements(); ++e) {
        const FragmentCell x = mma_c_cell(shape, lane, e);
        c.insert({x.row, x.col});
      }
    }
    EXPECT_EQ(a.size(), static_cast<std::size_t>(shape.m * shape.k)) << "k " << shape.k;
    EXPECT_EQ(b.size(), static_cast<std::size_t>(shape.k * shape.n)) << "k " << shape.k;
    EXPECT_EQ(c.size(), static_cast<std::size_t>(shape.m * shape.n)) << "k " << shape.k;
  }
}

TEST(MmaFragments, LdmatrixGivesEachLaneTwoNeighboursOfARow) {
  // Without .trans, lane l receives row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of each matrix
  // (as stored); .trans delivers the transpose. Register r holds matrix r (the rows whose
  // addresses lanes 8 r .. 8 r + 7 gave).
  EXPECT_EQ(ldmatrix_cell(false, 5, 0, 1), (FragmentCell{1, 3}));
  EXPECT_EQ(ldmatrix_cell(true, 5, 0, 1), (FragmentCell{3, 1}));
  for (const bool trans : {false, true}) {
    std::set<std::pair<int, int>> cells;
    for (int lane = 0; lane < 32; ++lane)
      for (int half = 0; half < 2; ++half) {
        const FragmentCell x = ldmatrix_cell(trans, lane, 2, half);
        cells.insert({x.row, x.col});
      }
    EXPECT_EQ(cells.size(), 64u) << "each register of the warp covers its 8 x 8 matrix";
  }
  // A 16 x 16 tile of A loaded as four matrices (rows 8 (j % 2), columns 8 (j / 2)): register j
  // without .trans is A's fragment register j (elements 2 j, 2 j + 1), what the printer relies on.
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int half = 0; half < 2; ++half) {
        const FragmentCell m = ldmatrix_cell(false, lane, j, half);
        EXPECT_EQ((FragmentCell{m.row + 8 * (j % 2), m.col + 8 * (j / 2)}), mma_a_cell(kM16N8K16, lane, 2 * j + half));
      }
  // B stored with its steps along the rows ([k][n]) and loaded with .trans, matrices j = steps
  // 8 (j % 2), columns 8 (j / 2): registers 0, 1 are the fragment of the first 8 columns.
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 2; ++j)
      for (int half = 0; half < 2; ++half) {
        const FragmentCell m = ldmatrix_cell(true, lane, j, half);  // (step, column) as stored
        EXPECT_EQ((FragmentCell{m.row + 8 * j, m.col}), mma_b_cell(kM16N8K16, lane, 2 * j + half));
      }
}

}  // namespace
}  // namespace cannl::codegen
