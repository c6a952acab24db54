#pragma once
// The lane layouts of the warp-level tensor-core instructions the GPU dialects use, in one place
// (the PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", "... for
// mma.m16n8k8", and "ldmatrix"): which cell of a matrix each register element of each of a
// warp's 32 lanes holds. The tensor-core tile printer writes its index arithmetic after these
// tables, the OpenCL emulation of the instructions (mma_emulation.cpp) is generated from them, and
// their unit test restates the ISA's formulas and checks that every fragment covers its matrix
// exactly once.
//
//   mma_a_cell(kM16N8K16, 5, 0) == FragmentCell{1, 2}   // lane 5: groupID 1, thread in group 1

namespace cannl::codegen {

/// A warp-level MMA with f32 accumulators: D (m x n) = A (m x k, row-major) * B (k x n,
/// column-major) + C. `input_bits`: 16 (bf16, f16: two elements per 32-bit register) or 32 (tf32).
struct MmaShape {
  int m = 16, n = 8, k = 16;
  int input_bits = 16;
  /// Elements of A, B and C / D each lane holds.
  int a_elements() const { return m * k / 32; }
  int b_elements() const { return k * n / 32; }
  int c_elements() const { return m * n / 32; }
  /// Elements one 32-bit register holds.
  int per_register() const { return 32 / input_bits; }
};

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32
inline constexpr MmaShape kM16N8K16{16, 8, 16, 16};
/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
inline constexpr MmaShape kM16N8K8{16, 8, 8, 32};

/// A cell of a matrix: row and column (for B: row = step k, column = n).
struct FragmentCell {
  int row = 0;
  int col = 0;
  bool operator==(const FragmentCell&) const = default;
};

/// Element `e` (numbered low to high: register e / per_register(), its low half first) of lane
/// `lane`'s fragment of A, B and the accumulators C / D.
FragmentCell mma_a_cell(const MmaShape& shape, int lane, int e);
FragmentCell mma_b_cell(const MmaShape& shape, int lane, int e);
FragmentCell mma_c_cell(const MmaShape& shape, int lane, int e);

/// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: lane `lane` gives the address of row
/// `lane % 8` of matrix `lane / 8`; register `reg` of every lane receives two 16-bit elements
/// of matrix `reg`, `half` 0 the low one. Which cell of that 8 x 8 matrix (as stored: rows at
/// the lanes' addresses) element `half` of register `reg` of `lane` is.
///   ldmatrix_cell(false, 5, 0, 1) == FragmentCell{1, 3}; ldmatrix_cell(true, 5, 0, 1) == FragmentCell{3, 1}
FragmentCell ldmatrix_cell(bool trans, int lane, int reg, int half);

}  // namespace cannl::codegen
