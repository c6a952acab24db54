// The legality oracle: proofs of independence and of races over affine access relations, the
// Unknown middle, and validate_parallel's structural rules.
#include <gtest/gtest.h>

#include "cannl/schedule/legality.h"
#include "cannl/schedule/transforms.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

Legality verdict(const ir::LoweredRoutine& r, ir::Symbol s, bool license = false) {
  return parallel_legality(r, s, license).legality;
}

TEST(Legality, ElementwiseLoopsAreProvenLegal) {
  Elementwise e(5, 7);
  EXPECT_EQ(verdict(e.routine(), e.i), Legality::Legal);
  EXPECT_EQ(verdict(e.routine(), e.j), Legality::Legal);
}

TEST(Legality, ReductionLoopIsARaceUnlessReassociationIsLicensed) {
  RowSum rs(4, 6);
  const auto v = parallel_legality(rs.routine(), rs.r);
  EXPECT_EQ(v.legality, Legality::Illegal);
  EXPECT_NE(v.reason.find("s[i0] (written) and s[i0]"), std::string::npos) << v.reason;
  const auto licensed = parallel_legality(rs.routine(), rs.r, true);
  EXPECT_EQ(licensed.legality, Legality::Legal);
  EXPECT_TRUE(licensed.reduction);
  EXPECT_EQ(verdict(rs.routine(), rs.i), Legality::Legal);
}

TEST(Legality, MatmulRowsAreLegalAndTheReductionIsNot) {
  Matmul mm(8, 4, 4);
  const auto r = mm.routine();
  EXPECT_EQ(verdict(r, mm.i), Legality::Legal);
  EXPECT_EQ(verdict(r, mm.j), Legality::Legal);
  EXPECT_EQ(verdict(r, mm.k), Legality::Illegal);
  // After a split, the chunk loop's cells 4*o + inner never meet across chunks.
  const Split s = split(mm.i, 4);
  const auto split_r = schedule::apply(r, s);
  EXPECT_EQ(verdict(split_r, s.outer), Legality::Legal);
  EXPECT_EQ(verdict(split_r, s.inner), Legality::Legal);
}

// A Pad's or Split's guard `index < bound` hides no race: the reduction's own cell is reached in
// two iterations where the guard holds (r = 0 and 1 of the padded row sum), so the loop stays
// Illegal, and a Grid retype is refused instead of accepted as the user's assertion. A guard
// that holds in one iteration only (r < 1) proves nothing.
TEST(Legality, AGuardThatHoldsInTwoIterationsStillProvesTheRace) {
  RowSum rs(4, 6);
  const ir::LoweredRoutine padded = schedule::apply(rs.routine(), Pad{rs.r, 4});
  const auto v = parallel_legality(padded, rs.r);
  EXPECT_EQ(v.legality, Legality::Illegal) << v.reason;
  EXPECT_NE(v.reason.find("reach the same cell in different iterations"), std::string::npos) << v.reason;
  expect_schedule_error([&] { schedule::apply(padded, Retype{rs.r, ir::AxisType::Grid}); }, {"a race", "reach the same cell"});
  const Split halves = split(rs.r, 4);  // 4 + 2: the guard 4 o + inner < 6 holds for o = 0 and 1
  const ir::LoweredRoutine split_r = schedule::apply(rs.routine(), halves);
  EXPECT_EQ(verdict(split_r, halves.outer), Legality::Illegal);
  const auto once = ir::apply(ir::Op::Cmplt, ir::DType::I64,
                              {ir::embed_index(it(rs.r)), ir::constant(1, ir::DType::I64)});
  const ir::LoweredRoutine plain = rs.routine();
  const auto& nest = std::get<ir::For>(std::get<ir::Seq>(plain.body->node).stmts[1]->node);
  const auto& row = std::get<ir::For>(nest.body->node);
  const ir::LoweredRoutine first_only{
      "first_only", ir::for_loop(nest.index, 0, 4, ir::for_loop(row.index, 0, 6, ir::if_then(once, row.body))), {}};
  EXPECT_EQ(verdict(first_only, rs.r), Legality::Unknown);
}

TEST(Legality, AShiftedRecurrenceIsUnknownNotProven) {
  // x[i + 1] = x[i] + 1: a loop-carried dependence the simple oracle neither proves nor refutes.
  const auto x = ir::make_node("x", ir::DType::F32, {8});
  const ir::Symbol i = ir::fresh_symbol();
  const auto v = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(x, {it(i)}), ir::constant(1, ir::DType::F32)});
  const ir::LoweredRoutine r{"shift", ir::for_loop(i, 0, 7, ir::set(x, {ir::AxisIndex{{{1, i}}, 1}}, v)), {}};
  const auto verdict_of = parallel_legality(r, i);
  EXPECT_EQ(verdict_of.legality, Legality::Unknown);
  EXPECT_NE(verdict_of.reason.find("x[i0 + 1] (written) and x[i0] (read)"), std::string::npos) << verdict_of.reason;
}

// d[0] = d[0] + d[0] * x[k] is no reduction: its v reads d, so re-associating the steps
// changes what each step reads (d0 * prod(1 + x[k]) serially). Only the accumulation's own top
// operand is the licensed read; the read inside v is a plain read of a written cell.
TEST(Legality, AnAccumulationWhoseValueReadsItsCellIsNoLicensedReduction) {
  const auto d = ir::make_node("d", ir::DType::F32, {1}), x = ir::make_node("x", ir::DType::F32, {8});
  const ir::Symbol k = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> cell{ir::AxisIndex::fixed(0)};
  const auto grow = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(d, cell), ir::get(x, {it(k)})});
  const auto value = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(d, cell), grow});
  const ir::LoweredRoutine r{"compound", ir::for_loop(k, 0, 8, ir::set(d, cell, value)), {}};
  const auto v = parallel_legality(r, k, true);
  EXPECT_EQ(v.legality, Legality::Illegal) << v.reason;
  EXPECT_FALSE(v.reduction);
  expect_schedule_error([&] { schedule::apply(r, Retype{k, ir::AxisType::WorkgroupReduce}); }, {"a race", "d[0] (written)"});
}

// A tile that starts at zero zeroes the whole of its output before its fallback runs (the
// interpreter runs it so): in a loop over row blocks, every iteration zeroes the rows the others
// computed, so the blocks are not independent although the fallbacks' cells are disjoint.
TEST(Legality, ATileStartingAtZeroWritesItsWholeOutput) {
  Matmul mm(4, 4, 4);
  const Split rows = split(mm.i, 2);
  const ir::LoweredRoutine tiled =
      schedule::apply(schedule::apply(ir::LoweredRoutine{"tiles", mm.nest(), {}}, rows), Tensorize{rows.inner, mm.j, mm.k});
  const auto& blocks = std::get<ir::For>(tiled.body->node);
  const auto stmts = ir::flatten_seq(blocks.body);
  ASSERT_EQ(stmts.size(), 1u);
  ir::TileMma tile = std::get<ir::TileMma>(stmts[0]->node);
  EXPECT_EQ(verdict(tiled, rows.outer), Legality::Legal);
  tile.zero_start = true;
  const ir::LoweredRoutine zeroing{"tiles", ir::for_loop(blocks.index, blocks.begin, blocks.end, ir::tile_mma(tile)), {}};
  const auto v = parallel_legality(zeroing, rows.outer);
  EXPECT_EQ(v.legality, Legality::Illegal) << v.reason;
  EXPECT_NE(v.reason.find("zero_out c (written)"), std::string::npos) << v.reason;
}

TEST(Legality, ALocalSharedAcrossIterationsIsARace) {
  const auto out = ir::make_node("out", ir::DType::F32, {4});
  const ir::Symbol i = ir::fresh_symbol();
  const int id = ir::fresh_scope_id();
  const auto body = ir::seq({ir::set_local(id, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get_local(id, ir::DType::F32), ir::constant(1, ir::DType::F32)})),
                             ir::set(out, {it(i)}, ir::get_local(id, ir::DType::F32))});
  const ir::LoweredRoutine r{"running", ir::seq({ir::declare_local(id, ir::DType::F32, true), ir::for_loop(i, 0, 4, body)}), {}};
  const auto v = parallel_legality(r, i);
  EXPECT_EQ(v.legality, Legality::Illegal);
  EXPECT_NE(v.reason.find("declared outside the loop"), std::string::npos) << v.reason;
}

TEST(Legality, AGuardedZeroOutInsideALoopIsNotProvenAConflict) {
  Matmul mm(4, 4, 4);
  const ir::Symbol t = ir::fresh_symbol();
  const auto guarded = ir::if_then(ir::apply(ir::Op::Cmplt, ir::DType::I64, {ir::embed_index(it(t)), ir::constant(1, ir::DType::I64)}), ir::zero_out(mm.c));
  const ir::LoweredRoutine r{"zeroing", ir::for_loop(t, 0, 3, guarded), {}};
  EXPECT_EQ(verdict(r, t), Legality::Unknown);
  const ir::LoweredRoutine every{"zeroing", ir::for_loop(t, 0, 3, ir::zero_out(mm.c)), {}};
  EXPECT_EQ(verdict(every, t), Legality::Illegal);
}

TEST(ValidateParallel, AcceptsProvenAnnotations) {
  Elementwise e(8, 8);
  auto r = schedule::apply(e.routine(), Retype{e.i, ir::AxisType::Grid});
  r = schedule::apply(r, Retype{e.j, ir::AxisType::Vectorized});
  EXPECT_NO_THROW(validate_parallel(r));
}

TEST(ValidateParallel, GridLoopsStartAtZero) {
  Elementwise e(8, 8);
  const ir::LoweredRoutine plain = e.routine();
  const auto body = std::get<ir::For>(plain.body->node).body;
  const ir::LoweredRoutine r{"offset", ir::for_loop(e.i, 1, 8, body, ir::AxisType::Grid), {}};
  expect_schedule_error([&] { validate_parallel(r); }, {"validate_parallel: loop i0", "must start at 0", ">> for i0 in [1, 8) grid:"});
}

TEST(ValidateParallel, RejectsAProvenRace) {
  RowSum rs(4, 4);
  const ir::LoweredRoutine plain = rs.routine();
  const auto& outer = std::get<ir::For>(std::get<ir::Seq>(plain.body->node).stmts[1]->node);
  const auto& inner = std::get<ir::For>(outer.body->node);
  const ir::LoweredRoutine racy{"racy", ir::for_loop(outer.index, 0, 4, ir::for_loop(inner.index, 0, 4, inner.body, ir::AxisType::Grid)), {}};
  expect_schedule_error([&] { validate_parallel(racy); }, {"not independent", "s[i0] (written)"});
}

// A barrier under an If is accepted where every thread of a block takes the same branch: the
// condition names block or serial indices only, and reads no memory.
TEST(ValidateParallel, AcceptsABarrierOnlyUnderAnIfEveryThreadDecidesAlike) {
  const ir::Symbol g = ir::fresh_symbol(), j = ir::fresh_symbol();
  const auto below_two = [](ir::Symbol s) {
    return ir::apply(ir::Op::Cmplt, ir::DType::I64, {ir::embed_index(it(s)), ir::constant(2, ir::DType::I64)});
  };
  const auto barrier_if = [](const ir::ScalarRef& c) { return ir::if_then(c, ir::barrier()); };
  const ir::LoweredRoutine uniform{"uniform", ir::for_loop(g, 0, 4, barrier_if(below_two(g)), ir::AxisType::Grid), {}};
  validate_parallel(uniform);
  const ir::LoweredRoutine by_thread{
      "by_thread",
      ir::for_loop(g, 0, 4, ir::for_loop(j, 0, 4, barrier_if(below_two(j)), ir::AxisType::Workgroup), ir::AxisType::Grid),
      {}};
  expect_schedule_error([&] { validate_parallel(by_thread); }, {"barrier under an If whose condition may differ"});
  const auto m = ir::make_node("m", ir::DType::F32, {4});
  const auto positive = ir::apply(ir::Op::Cmplt, ir::DType::F32, {ir::constant(0, ir::DType::F32), ir::get(m, {it(g)})});
  const ir::LoweredRoutine by_data{"by_data", ir::for_loop(g, 0, 4, barrier_if(positive), ir::AxisType::Grid), {}};
  expect_schedule_error([&] { validate_parallel(by_data); }, {"barrier under an If whose condition may differ"});
}

}  // namespace
}  // namespace cannl::schedule::testing
