#pragma once
// The packed-operand contract on any backend, for the runtime and GPU suites: a matmul whose right
// operand a hoisted Stage packs (its steps times its column chunks) computes what the default
// compile computes; the packing runs before the first call and never per call (a packed buffer
// overwritten behind the runtime's back stays overwritten), and again after the source changes.
// PackedMatmul is the matmul itself, for tests of the other ways a source changes.
//
//   expect_packed_once_and_after_changes(runtime::Context::cpu());

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cannl/ir/tree_mapper.h"
#include "cannl/runtime/context.h"
#include "runtime/test_util.h"

namespace cannl::testing {

/// The matmul's values: small multiples of 1/8, so any summation order is exact.
inline std::vector<double> eighths(std::int64_t n, int mod, int shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(static_cast<int>((k + shift) % mod) - mod / 2) / 8.0;
  return v;
}

/// A matmul c = a . b whose right operand b a hoisted Stage packs (its steps times its column
/// chunks), and its reference values from the interpreter's default compile.
struct PackedMatmul {
  static constexpr std::int64_t kM = 24, kK = 20, kN = 32, kChunk = 8;
  ir::NodeRef a = ir::make_node("a", ir::DType::F32, {kM, kK});
  ir::NodeRef b = ir::make_node("b", ir::DType::F32, {kK, kN});
  ir::NodeRef c = ir::make_node("c", ir::DType::F32, {kM, kN});
  ir::Comp comp = single_accum(accum_op(c, ir::Op::Add, ir::Op::Mul, {of(a), of(b)},
                                        matmul_projections(kM, kK, kN), /*init=*/true));

  static std::vector<double> a_values() { return eighths(kM * kK, 7, 0); }
  /// b's values, a different matrix for each `shift`.
  static std::vector<double> b_values(int shift) { return eighths(kK * kN, 5, shift); }

  /// c's bytes for b_values(shift), from the interpreter's default compile.
  std::vector<std::byte> reference(int shift) const {
    runtime::Context interp = runtime::Context::interpreter();
    const auto r = interp.compile(comp, "mm_reference");
    interp.set_values(a, a_values());
    interp.set_values(b, b_values(shift));
    interp.run(r);
    return interp.get_bytes(c);
  }

  /// The routine compiled in `ctx` with b packed (a and b must hold values there: the packing
  /// runs at link time).
  runtime::Routine compile(runtime::Context& ctx) const {
    const auto hoisted = runtime::ScheduleChoice::build([b_id = b->id](const ir::LoweredRoutine& r) {
      ir::Symbol columns{};
      ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
        if (const auto* f = std::get_if<ir::For>(&s.node); f && f->end == kN) columns = f->index;
      });
      const schedule::Split chunks = schedule::split(columns, kChunk);
      return std::vector<schedule::Transform>{chunks, schedule::Stage{b_id, chunks.outer, true}};
    });
    auto routine = ctx.compile(comp, "mm_packed", {.schedule = hoisted});
    EXPECT_EQ(routine.lowered().packed.size(), 1u) << ir::print_loop_ir(routine.lowered());
    return routine;
  }
};

inline void expect_packed_once_and_after_changes(runtime::Context ctx) {
  const PackedMatmul mm;
  ctx.set_values(mm.a, PackedMatmul::a_values());
  ctx.set_values(mm.b, PackedMatmul::b_values(0));
  const auto routine = mm.compile(ctx);
  ASSERT_EQ(routine.lowered().packed.size(), 1u);
  const ir::NodeRef packed = routine.lowered().packed[0].packed;
  // The step loop encloses the column chunks (product space m, k, n): one panel row per step.
  EXPECT_EQ(packed->dims, (std::vector<std::int64_t>{PackedMatmul::kK, PackedMatmul::kN / PackedMatmul::kChunk,
                                                     PackedMatmul::kChunk}));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(mm.c), mm.reference(0)) << routine.source();

  // Not per call: zeroing the packed buffer zeroes the product until b changes.
  ctx.set_values(packed, std::vector<double>(static_cast<std::size_t>(packed->num_elements()), 0.0));
  ctx.run(routine);
  for (const double v : ctx.get_values(mm.c)) ASSERT_EQ(v, 0.0) << "the packing ran again with b unchanged";

  ctx.set_values(mm.b, PackedMatmul::b_values(3));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(mm.c), mm.reference(3)) << "b changed: the packing must run again";
}

}  // namespace cannl::testing
