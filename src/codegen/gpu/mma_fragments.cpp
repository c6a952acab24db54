// Tensor-core fragment layouts (mma_fragments.h), as the PTX ISA states them with
// groupID = laneid >> 2 and threadID_in_group = laneid % 4.
#include "codegen/gpu/mma_fragments.h"

#include "cannl/support/error.h"

namespace cannl::codegen {

namespace {

int group_of(int lane) { return lane >> 2; }
int thread_in_group(int lane) { return lane % 4; }

void check(bool ok, const char* what) {
  internal_check(ok, [&] { return std::string("mma fragments: ") + what + " out of range"; });
}

}  // namespace

FragmentCell mma_a_cell(const MmaShape& shape, int lane, int e) {
  check(lane >= 0 && lane < 32 && e >= 0 && e < shape.a_elements(), "A element");
  const int g = group_of(lane), t = thread_in_group(lane);
  if (shape.input_bits == 32) {
    // m16n8k8 tf32: rows groupID (a0, a2) and groupID + 8 (a1, a3); columns threadID_in_group
    // (a0, a1) and threadID_in_group + 4 (a2, a3).
    return {g + 8 * (e % 2), t + 4 * (e / 2)};
  }
  // m16n8k16 16-bit: rows groupID for a0, a1, a4, a5, groupID + 8 otherwise; columns
  // threadID_in_group * 2 + (i & 1), plus 8 for i >= 4.
  const bool lower = e == 2 || e == 3 || e == 6 || e == 7;
  return {g + (lower ? 8 : 0), t * 2 + (e & 1) + (e >= 4 ? 8 : 0)};
}

FragmentCell mma_b_cell(const MmaShape& shape, int lane, int e) {
  check(lane >= 0 && lane < 32 && e >= 0 && e < shape.b_elements(), "B element");
  const int g = group_of(lane), t = thread_in_group(lane);
  // tf32: rows threadID_in_group (b0), + 4 (b1); 16-bit: threadID_in_group * 2 + (i & 1), plus 8
  // for i >= 2. Columns groupID.
  if (shape.input_bits == 32) return {t + 4 * e, g};
  return {t * 2 + (e & 1) + (e >= 2 ? 8 : 0), g};
}

FragmentCell mma_c_cell(const MmaShape& shape, int lane, int e) {
  check(lane >= 0 && lane < 32 && e >= 0 && e < shape.c_elements(), "C element");
  // Both shapes: rows groupID (c0, c1) and groupID + 8 (c2, c3); columns threadID_in_group * 2 + (i & 1).
  return {group_of(lane) + (e >= 2 ? 8 : 0), thread_in_group(lane) * 2 + (e & 1)};
}

FragmentCell ldmatrix_cell(bool trans, int lane, int reg, int half) {
  check(lane >= 0 && lane < 32 && reg >= 0 && reg < 4 && (half == 0 || half == 1), "ldmatrix element");
  // Each lane holds two neighbours along a row of the matrix as stored (row lane / 4); .trans
  // delivers the transpose: two neighbours along a column.
  const FragmentCell stored{lane / 4, 2 * (lane % 4) + half};
  return trans ? FragmentCell{stored.col, stored.row} : stored;
}

}  // namespace cannl::codegen
