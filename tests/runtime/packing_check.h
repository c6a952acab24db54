#pragma once
// The packed-operand contract on any backend, for the runtime and GPU suites: a matmul whose right
// operand a hoisted Stage packs (its steps times its column chunks) computes what the default
// compile computes; the packing runs before the first call and never per call (a packed buffer
// overwritten behind the runtime's back stays overwritten), and again after the source changes.
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

inline void expect_packed_once_and_after_changes(runtime::Context ctx) {
  constexpr std::int64_t kM = 24, kK = 20, kN = 32, kChunk = 8;
  const ir::NodeRef a = ir::make_node("a", ir::DType::F32, {kM, kK});
  const ir::NodeRef b = ir::make_node("b", ir::DType::F32, {kK, kN});
  const ir::NodeRef c = ir::make_node("c", ir::DType::F32, {kM, kN});
  const ir::Comp comp = single_accum(accum_op(c, ir::Op::Add, ir::Op::Mul, {of(a), of(b)},
                                              matmul_projections(kM, kK, kN), /*init=*/true));
  // The reference: the interpreter, default compile, for b's first and second values.
  auto reference = [&](int shift) {
    runtime::Context interp = runtime::Context::interpreter();
    const auto r = interp.compile(comp, "mm_reference");
    interp.set_values(a, eighths(kM * kK, 7, 0));
    interp.set_values(b, eighths(kK * kN, 5, shift));
    interp.run(r);
    return interp.get_bytes(c);
  };
  const auto hoisted = runtime::ScheduleChoice::build([&](const ir::LoweredRoutine& r) {
    ir::Symbol columns{};
    ir::for_each_stmt(r.body, [&](const ir::Stmt& s) {
      if (const auto* f = std::get_if<ir::For>(&s.node); f && f->end == kN) columns = f->index;
    });
    const schedule::Split chunks = schedule::split(columns, kChunk);
    return std::vector<schedule::Transform>{chunks, schedule::Stage{b->id, chunks.outer, true}};
  });
  ctx.set_values(a, eighths(kM * kK, 7, 0));
  ctx.set_values(b, eighths(kK * kN, 5, 0));
  const auto routine = ctx.compile(comp, "mm_packed", {.schedule = hoisted});
  ASSERT_EQ(routine.lowered().packed.size(), 1u) << ir::print_loop_ir(routine.lowered());
  const ir::NodeRef packed = routine.lowered().packed[0].packed;
  // The step loop encloses the column chunks (product space m, k, n): one panel row per step.
  EXPECT_EQ(packed->dims, (std::vector<std::int64_t>{kK, kN / kChunk, kChunk}));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(c), reference(0)) << routine.source();

  // Not per call: zeroing the packed buffer zeroes the product until b changes.
  ctx.set_values(packed, std::vector<double>(static_cast<std::size_t>(packed->num_elements()), 0.0));
  ctx.run(routine);
  for (const double v : ctx.get_values(c)) ASSERT_EQ(v, 0.0) << "the packing ran again with b unchanged";

  ctx.set_values(b, eighths(kK * kN, 5, 3));
  ctx.run(routine);
  EXPECT_EQ(ctx.get_bytes(c), reference(3)) << "b changed: the packing must run again";
}

}  // namespace cannl::testing
