// Each schedule transform on hand-written nests, checked against the reference interpreter
// (bitwise where no re-association is licensed) and by the shape of the printed result; the
// ScheduleError cases assert the type and a message substring.
#include <gtest/gtest.h>

#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

void expect_same(const ir::LoweredRoutine& before, const ir::LoweredRoutine& after, Tolerance t = Tolerance::Bitwise) {
  EXPECT_EQ(compare(run_interp(before), run_interp(after), t), "") << ir::print_loop_ir(after);
}

TEST(Split, DividingFactorKeepsResultsAndNeedsNoGuard) {
  Matmul mm(8, 6, 5);
  const auto r = mm.routine();
  const Split s = split(mm.i, 4);
  const auto out = schedule::apply(r, s);
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 2):\n  for i1 in [0, 4):")) << text;
  EXPECT_TRUE(has(text, "c[4*i0 + i1, i2]")) << text;
  EXPECT_FALSE(has(text, "if ")) << text;
  expect_same(r, out);
}

TEST(Split, RemainderGetsAGuard) {
  Matmul mm(7, 6, 5);
  const auto r = mm.routine();
  const auto out = schedule::apply(r, split(mm.i, 3, ir::AxisType::Grid));
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 3) grid:")) << text;
  EXPECT_TRUE(has(text, "if lt:i64(index(3*i0 + i1), 7:i64):")) << text;
  expect_same(r, out);
}

TEST(Split, ZeroFactorIsAScheduleError) {
  Matmul mm(8, 6, 5);
  expect_schedule_error([&] { schedule::apply(mm.routine(), split(mm.j, 0)); },
                        {"split i1 by 0", "factor must be in [1, 6]", ">> ", "for i1 in [0, 6)", "legal alternatives: factors 1, 2, 3, 6"});
}

TEST(Split, FactorAboveTheExtentIsAScheduleError) {
  Matmul mm(8, 6, 5);
  expect_schedule_error([&] { schedule::apply(mm.routine(), split(mm.k, 9)); }, {"split i2 by 9", "[1, 5]"});
  expect_schedule_error([&] { schedule::apply(mm.routine(), split(mm.k, -2)); }, {"split i2 by -2"});
}

TEST(Split, UnknownLoopIsAScheduleError) {
  Matmul mm(2, 2, 2);
  expect_schedule_error([&] { schedule::apply(mm.routine(), split(ir::fresh_symbol(), 2)); }, {"no loop with symbol", "loops i0 .. i2"});
}

// A Split whose minted symbols already bind loops (the same transform applied to another loop)
// nested loops rebinding them, which only the verifier caught, as an InternalError.
TEST(Split, SymbolsAlreadyInTheRoutineAreAScheduleError) {
  Matmul mm(8, 6, 5);
  const Split s = split(mm.i, 4);
  const auto once = schedule::apply(mm.routine(), s);
  Split again = s;
  again.axis = mm.j;
  expect_schedule_error([&] { schedule::apply(once, again); }, {"split i2 by 4", "takes the symbol of loop i0, already in the routine"});
}

TEST(Swap, InterchangesAPerfectNestBitwise) {
  Matmul mm(4, 5, 3);
  const auto r = mm.routine();
  auto out = schedule::apply(r, Swap{mm.i, mm.j});
  out = schedule::apply(out, Swap{mm.i, mm.k});  // now j, k, i: c's cells still see k in order
  EXPECT_TRUE(has(ir::print_loop_ir(out), "c[i2, i0] = add(c[i2, i0], mul(a[i2, i1], b[i1, i0]))")) << ir::print_loop_ir(out);
  expect_same(r, out);
}

TEST(Swap, NotAPerfectNestIsAScheduleError) {
  Matmul mm(4, 5, 3);
  expect_schedule_error([&] { schedule::apply(mm.routine(), Swap{mm.i, mm.k}); },
                        {"swap i0 and i2", "not a perfect nest", "swap i0 with i1 (its only child)"});
}

TEST(Swap, ReorderingASharedCellIsAScheduleError) {
  // x[i + j] = x[i + j] * 2 + 1 over (i, j): the cells' update order depends on the loop order.
  const auto x = ir::make_node("x", ir::DType::F32, {8});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol();
  const ir::AxisIndex at{{{1, i}, {1, j}}, 0};
  // (x - 1 would be a subtracting reduction, which Swap may reorder like a sum.)
  const auto twice = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(x, {at}), ir::constant(2, ir::DType::F32)});
  const auto v = ir::apply(ir::Op::Add, ir::DType::F32, {twice, ir::constant(1, ir::DType::F32)});
  const ir::LoweredRoutine r{"diag", ir::for_loop(i, 0, 4, ir::for_loop(j, 0, 4, ir::set(x, {at}, v))), {}};
  expect_schedule_error([&] { schedule::apply(r, Swap{i, j}); }, {"x is accessed by several iterations"});
}

// A local declared outside the nest and set in it (here Privatize's) carries a value from one
// iteration to the next: c = c * 0.5 + x[k, j] over (k, j) is no reduction, and swapping the
// privatized nest gave a different c (the swap was accepted; unprivatized it is refused).
TEST(Swap, ALocalCarriedThroughTheNestIsAScheduleError) {
  const auto x = ir::make_node("x", ir::DType::F32, {3, 4});
  const auto c = ir::make_node("c", ir::DType::F32, {1});
  const ir::Symbol k = ir::fresh_symbol(), j = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> cell{ir::AxisIndex::fixed(0)};
  const auto half = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(c, cell), ir::constant(0.5, ir::DType::F32)});
  const auto v = ir::apply(ir::Op::Add, ir::DType::F32, {half, ir::get(x, {it(k), it(j)})});
  const ir::LoweredRoutine r{"recurrence", ir::for_loop(k, 0, 3, ir::for_loop(j, 0, 4, ir::set(c, cell, v))), {}};
  expect_schedule_error([&] { schedule::apply(r, Swap{k, j}); }, {"c is accessed by several iterations"});
  const auto privatized = schedule::apply(r, Privatize{c->id, k});
  expect_schedule_error([&] { schedule::apply(privatized, Swap{k, j}); },
                        {"swap i0 and i1", "local v", "declared outside the nest and set in it", ">> for i0"});
}

TEST(Retype, ParallelLoopBecomesGrid) {
  Elementwise e(6, 5);
  const auto out = schedule::apply(e.routine(), Retype{e.i, ir::AxisType::Grid});
  EXPECT_TRUE(has(ir::print_loop_ir(out), "for i0 in [0, 6) grid:"));
  expect_same(e.routine(), out);
}

TEST(Retype, ReductionLoopToGridIsARace) {
  RowSum rs(4, 6);
  expect_schedule_error([&] { schedule::apply(rs.routine(), Retype{rs.r, ir::AxisType::Grid}); },
                        {"retype i1 to grid", "a race", "s[i0] (written) and s[i0]", ">> ", "grid on i0 (proven legal)"});
}

TEST(Retype, ReductionLoopMayBeVectorized) {
  RowSum rs(4, 6);
  const auto out = schedule::apply(rs.routine(), Retype{rs.r, ir::AxisType::Vectorized});
  EXPECT_TRUE(has(ir::print_loop_ir(out), "for i1 in [0, 6) vectorized:"));
}

TEST(Unroll, AnnotationAndMaterializedCopies) {
  Elementwise e(3, 4);
  const auto annotated = schedule::apply(e.routine(), Unroll{e.j, false});
  EXPECT_TRUE(has(ir::print_loop_ir(annotated), "for i1 in [0, 4) unrolled:"));
  const auto copies = schedule::apply(e.routine(), Unroll{e.j, true});
  const std::string text = ir::print_loop_ir(copies);
  EXPECT_FALSE(has(text, "i1")) << text;
  EXPECT_TRUE(has(text, "out[i0, 3] = add(mul(x[i0, 3], 2), y[3])")) << text;
  expect_same(e.routine(), copies);
}

TEST(Unroll, MaterializingALongLoopIsAScheduleError) {
  Elementwise e(2, 100);
  expect_schedule_error([&] { schedule::apply(e.routine(), Unroll{e.j, true}); }, {"copy the body 100 times", "Split by a factor"});
}

TEST(Pad, ExtendsWithGuardedLeaves) {
  Matmul mm(5, 6, 3);
  const auto r = mm.routine();
  const auto out = schedule::apply(r, Pad{mm.i, 4});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 8):")) << text;
  EXPECT_TRUE(has(text, "if lt:i64(index(i0), 5:i64):")) << text;
  expect_same(r, out);
}

TEST(Tensorize, MatmulNestBecomesATileWithItsFallback) {
  Matmul mm(6, 7, 5);
  const auto r = mm.routine();
  const auto out = schedule::apply(r, Tensorize{mm.i, mm.j, mm.k});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "tile_mma i0 in [0, 6), i1 in [0, 7), i2 in [0, 5): c[i0, i1] add= a[i0, i2] * b[i2, i1]\n  for i0 in [0, 6):")) << text;
  expect_same(r, out);
}

TEST(Tensorize, AnyLoopOrderAfterASplit) {
  Matmul mm(8, 4, 6);
  auto r = schedule::apply(mm.routine(), Swap{mm.j, mm.k});  // i, k, j
  const Split s = split(mm.i, 2);
  r = schedule::apply(r, s);
  const auto out = schedule::apply(r, Tensorize{s.inner, mm.j, mm.k});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 4):\n  tile_mma i1 in [0, 2), i2 in [0, 4), i3 in [0, 6): c[2*i0 + i1, i2]")) << text;
  expect_same(mm.routine(), out);
}

TEST(Tensorize, NonMatmulNestIsAScheduleError) {
  Matmul mm(4, 4, 4);
  // c[i, j] += a[i, k] + b[k, j]: a sum, not a product.
  const auto sum = ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(mm.a, {it(mm.i), it(mm.k)}), ir::get(mm.b, {it(mm.k), it(mm.j)})});
  const auto store = ir::set(mm.c, {it(mm.i), it(mm.j)}, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(mm.c, {it(mm.i), it(mm.j)}), sum}));
  const ir::LoweredRoutine r{"not_matmul", ir::for_loop(mm.i, 0, 4, ir::for_loop(mm.j, 0, 4, ir::for_loop(mm.k, 0, 4, store))), {}};
  expect_schedule_error([&] { schedule::apply(r, Tensorize{mm.i, mm.j, mm.k}); },
                        {"tensorize i=i0 j=i1 k=i2", "not a matmul update", "none: this nest is not a matmul"});
  Elementwise e(4, 4);
  expect_schedule_error([&] { schedule::apply(e.routine(), Tensorize{e.i, e.j, e.i}); }, {"not a perfect nest of exactly three loops"});
}

// d[i + j] += a[i, k] * b[k, j]: two cells (i, j) of the tile store to one element of d, which a
// tile renderer (one accumulator per cell) cannot express. Unfolded tiles were not checked: the
// C backend's sgemm call gave d[1] = -4.3828125 where the fallback gives -5.5234375 (13 x 37 x 9).
TEST(Tensorize, CellsSharingAnElementOfTheTargetAreAScheduleError) {
  const auto a = ir::make_node("a", ir::DType::F32, {13, 9});
  const auto b = ir::make_node("b", ir::DType::F32, {9, 37});
  const auto d = ir::make_node("d", ir::DType::F32, {13 + 37 - 1});
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), k = ir::fresh_symbol();
  const std::vector<ir::AxisIndex> cell{{{{1, i}, {1, j}}, 0}};
  const auto product = ir::apply(ir::Op::Mul, ir::DType::F32, {ir::get(a, {it(i), it(k)}), ir::get(b, {it(k), it(j)})});
  const auto store = ir::set(d, cell, ir::apply(ir::Op::Add, ir::DType::F32, {ir::get(d, cell), product}));
  const ir::LoweredRoutine r{"shared_cells", ir::for_loop(i, 0, 13, ir::for_loop(j, 0, 37, ir::for_loop(k, 0, 9, store))), {}};
  expect_schedule_error([&] { schedule::apply(r, Tensorize{i, j, k}); },
                        {"tensorize i=i0 j=i1 k=i2", "two cells of the tile could store to one element of d", ">> for i0",
                         "the nest is no tile"});
}

TEST(Tensorize, WrongRolesSuggestTheRightOnes) {
  Matmul mm(4, 4, 4);
  expect_schedule_error([&] { schedule::apply(mm.routine(), Tensorize{mm.k, mm.j, mm.i}); },
                        {"not a matmul update", "legal alternatives: tensorize i=i0 j=i1 k=i2"});
}

TEST(ExpandZero, ZeroOutBecomesALoopNest) {
  Matmul mm(3, 4, 2);
  const auto out = schedule::apply(mm.routine(), ExpandZero{mm.c->id});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_FALSE(has(text, "zero_out")) << text;
  EXPECT_TRUE(has(text, "for i0 in [0, 3):\n  for i1 in [0, 4):\n    c[i0, i1] = 0")) << text;
  expect_same(mm.routine(), out);
  expect_schedule_error([&] { schedule::apply(mm.routine(), ExpandZero{mm.a->id}); }, {"no zero_out of that node", "c (n"});
}

TEST(SplitReduce, FixedOrderPartialsMatchWithinRounding) {
  RowSum rs(3, 10);
  const auto out = schedule::apply(rs.routine(), SplitReduce{rs.r, 3});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "in [0, 3):")) << text;
  EXPECT_TRUE(has(text, "in [3, 6):")) << text;
  EXPECT_TRUE(has(text, "in [6, 10):")) << text;
  expect_same(rs.routine(), out, Tolerance::Reassociated);
  expect_schedule_error([&] { schedule::apply(rs.routine(), SplitReduce{rs.i, 2}); }, {"not one reduction"});
  expect_schedule_error([&] { schedule::apply(rs.routine(), SplitReduce{rs.r, 1}); }, {"block count must be in [2, 10]"});
}

// 10 = 2 chunks of 4 lanes + a tail of 2; the lanes of every chunk are one elementwise loop.
TEST(SplitReduce, InterleavedLanesMatchWithinRounding) {
  RowSum rs(3, 10);
  const SplitReduce t = split_reduce_lanes(rs.r, 4, ir::AxisType::Vectorized);
  const auto out = schedule::apply(rs.routine(), t);
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i1 in [0, 4) vectorized:\n    s_partials[i1] = 0")) << text;
  EXPECT_TRUE(has(text, "for i2 in [0, 2):\n    for i3 in [0, 4) vectorized:\n      s_partials[i3] = add(s_partials[i3], x[i0, 4*i2 + i3])")) << text;
  EXPECT_TRUE(has(text, "for i4 in [0, 2) vectorized:\n    s_partials[i4] = add(s_partials[i4], x[i0, i4 + 8])")) << text;
  EXPECT_TRUE(has(text, "s[i0] = add(s[i0], add(add(s_partials[0], s_partials[1]), add(s_partials[2], s_partials[3])))")) << text;
  expect_same(rs.routine(), out, Tolerance::Reassociated);
  expect_schedule_error([&] { schedule::apply(rs.routine(), split_reduce_lanes(rs.r, 1)); }, {"lane count must be in [2, 10]"});
  expect_schedule_error([&] { schedule::apply(rs.routine(), split_reduce_lanes(rs.i, 2)); }, {"not one reduction"});
}

// A subtracting reduction s = s - x: each partial subtracts its lane's values from 0, and the
// partials are added together and to s (not subtracted: s - (p0 - p1) would add p1 back).
TEST(SplitReduce, SubtractingReductionsAddTheirPartials) {
  RowSum rs(3, 10, ir::Op::Sub);
  for (const SplitReduce& t : {SplitReduce{rs.r, 3}, split_reduce_lanes(rs.r, 4, ir::AxisType::Vectorized)}) {
    const auto out = schedule::apply(rs.routine(), t);
    const std::string text = ir::print_loop_ir(out);
    EXPECT_TRUE(has(text, "s[i0] = add(s[i0], add(")) << text;
    expect_same(rs.routine(), out, Tolerance::Reassociated);
  }
  RowSum reversed(3, 10, ir::Op::Sub);  // s = x - s is no reduction
  const auto flipped = ir::apply(ir::Op::Sub, ir::DType::F32, {ir::get(reversed.x, {it(reversed.i), it(reversed.r)}), ir::get(reversed.s, {it(reversed.i)})});
  const ir::LoweredRoutine not_a_sum{"flip", ir::seq({ir::zero_out(reversed.s), ir::for_loop(reversed.i, 0, 3, ir::for_loop(reversed.r, 0, 10, ir::set(reversed.s, {it(reversed.i)}, flipped)))}), {}};
  expect_schedule_error([&] { schedule::apply(not_a_sum, SplitReduce{reversed.r, 2}); }, {"not one reduction"});
}

// Max and min are associative (maximumNumber / minimumNumber): the interleaved form is exact.
TEST(SplitReduce, InterleavedMaxAndMinAreBitwise) {
  for (const ir::Op op : {ir::Op::Max, ir::Op::Min}) {
    RowSum rs(5, 37, op);
    expect_same(rs.routine(), schedule::apply(rs.routine(), split_reduce_lanes(rs.r, 8)));
  }
}

// Partials shared by the iterations of a Grid loop would race: each gets its own row.
TEST(SplitReduce, InterleavedPartialsHaveARowPerGridIteration) {
  RowSum rs(6, 40);
  const auto grid = schedule::apply(rs.routine(), Retype{rs.i, ir::AxisType::Grid});
  const auto out = schedule::apply(grid, split_reduce_lanes(rs.r, 8, ir::AxisType::Vectorized));
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "s_partials[i0, i3] = add(s_partials[i0, i3], x[i0, 8*i2 + i3])")) << text;
  expect_same(rs.routine(), out, Tolerance::Reassociated);
  // Retyping the row loop Grid afterwards would share one row: proven illegal.
  const auto serial = schedule::apply(rs.routine(), split_reduce_lanes(rs.r, 8));
  expect_schedule_error([&] { schedule::apply(serial, Retype{rs.i, ir::AxisType::Grid}); }, {"a race"});
}

TEST(Stage, PacksARowPanelPerChunkBitwise) {
  Matmul mm(8, 6, 5);
  const Split s = split(mm.i, 4);
  const auto r = schedule::apply(mm.routine(), s);
  const auto out = schedule::apply(r, Stage{mm.a->id, s.outer});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "for i0 in [0, 2):\n  for i1 in [0, 4):\n    for i2 in [0, 5):\n      a_tile[i1, i2] = a[4*i0 + i1, i2]")) << text;
  EXPECT_TRUE(has(text, "mul(a_tile[i3, i5], b[i5, i4])")) << text;
  expect_same(mm.routine(), out);
}

TEST(Stage, AWrittenSourceIsAScheduleError) {
  Matmul mm(4, 4, 4);
  expect_schedule_error([&] { schedule::apply(mm.routine(), Stage{mm.c->id, mm.i}); }, {"stage n", "the anchor loop writes c"});
  expect_schedule_error([&] { schedule::apply(mm.routine(), Stage{-5, mm.i}); }, {"does not touch that node"});
  const auto grid = schedule::apply(mm.routine(), Retype{mm.i, ir::AxisType::Grid});
  expect_schedule_error([&] { schedule::apply(grid, Stage{mm.b->id, mm.i}); }, {"rewritten by the parallel iterations of i0"});
}

// Reads under an empty loop have no bounding box: the range [0, -1] of the empty loop made the
// copy read x[-1] (an out-of-bounds access on the interpreter, a stray read in C), though the
// routine reads nothing there.
TEST(Stage, ReadsUnderAnEmptyLoopAreAScheduleError) {
  const auto x = ir::make_node("x", ir::DType::F32, {6});
  const auto y = ir::make_node("y", ir::DType::F32, {4, 6});
  const ir::Symbol o = ir::fresh_symbol(), i = ir::fresh_symbol(), k = ir::fresh_symbol();
  const ir::StmtRef read = ir::set(y, {it(o), it(i)}, ir::get(x, {{{{1, i}, {1, k}}, 0}}));
  const ir::LoweredRoutine r{"empty", ir::for_loop(o, 0, 4, ir::for_loop(i, 0, 6, ir::for_loop(k, 0, 0, read))), {}};
  for (const bool hoisted : {false, true})
    expect_schedule_error([&] { schedule::apply(r, Stage{x->id, o, hoisted}); },
                          {"stage n", "the reads of x are under an empty loop", ">> for i0"});
}

TEST(Stage, HoistedPacksEveryPanelOnceOutOfTheRoutineBitwise) {
  Matmul mm(4, 6, 5);
  const Split s = split(mm.j, 3);
  const auto r = schedule::apply(mm.routine(), s);
  const auto out = schedule::apply(r, Stage{mm.b->id, s.outer, true});
  ASSERT_EQ(out.packed.size(), 1u);
  EXPECT_EQ(out.packed[0].source, mm.b);
  // One axis for the chunk loop the reads mention, then the panel's (k, inner j).
  EXPECT_EQ(out.packed[0].packed->dims, (std::vector<std::int64_t>{2, 5, 3}));
  const std::string text = ir::print_loop_ir(out);
  const std::string body = text.substr(0, text.find("# packed"));
  EXPECT_TRUE(has(body, "mul(a[i0, i3], b_packed[i1, i3, i2])")) << text;
  EXPECT_FALSE(has(body, "b[")) << "the routine copies nothing per call:\n" << text;
  EXPECT_TRUE(has(text, "# packed before the first run and after each change of the source:\n"
                        "for i4 in [0, 2):\n  for i5 in [0, 5):\n    for i6 in [0, 3):\n"
                        "      b_packed[i4, i5, i6] = b[i5, 3*i4 + i6]")) << text;
  expect_same(mm.routine(), out);
}

TEST(Stage, HoistedIsAllowedUnderParallelLoops) {
  Matmul mm(6, 4, 5);
  const auto grid = schedule::apply(mm.routine(), Retype{mm.i, ir::AxisType::Grid});
  const auto out = schedule::apply(grid, Stage{mm.a->id, mm.i, true});
  EXPECT_EQ(out.packed.at(0).packed->dims, (std::vector<std::int64_t>{6, 5}));  // row i, then its panel
  expect_same(mm.routine(), out);
}

TEST(Stage, HoistedNeedsAnOperandTheRoutineNeverWritesAnUnguardedAnchorAndNoStatics) {
  Matmul mm(4, 4, 4);
  expect_schedule_error([&] { schedule::apply(mm.routine(), Stage{mm.c->id, mm.i, true}); }, {"hoisted stage n"});
  // c is written inside the anchor (the common check); here only the packing's own rule applies.
  Matmul two(4, 4, 4);
  const ir::LoweredRoutine writes_b{"m", ir::seq({ir::zero_out(two.b), two.nest()}), {}};
  expect_schedule_error([&] { schedule::apply(writes_b, Stage{two.b->id, two.i, true}); },
                        {"the routine writes b", "hoisted = false"});
  Matmul ragged(7, 4, 4);
  const Split s = split(ragged.i, 3);
  const auto guarded = schedule::apply(ragged.routine(), s);
  expect_schedule_error([&] { schedule::apply(guarded, Stage{ragged.b->id, ragged.j, true}); }, {"under a guard"});
  EXPECT_NO_THROW(schedule::apply(guarded, Stage{ragged.b->id, ragged.j}));  // packing per call is fine there

  const ir::NodeRef x = ir::make_node("x", ir::DType::F32, {3, 4});
  const ir::NodeRef y = ir::make_node("y", ir::DType::F32, {4});
  const ir::Symbol row = ir::fresh_symbol(), col = ir::fresh_symbol(), inner = ir::fresh_symbol();
  const ir::StmtRef copy = ir::for_loop(inner, 0, 1, ir::set(y, {it(col)}, ir::get(x, {it(row), it(col)}), "y = x[row]"));
  const ir::LoweredRoutine by_static{"pick", ir::for_loop(col, 0, 4, copy), {ir::StaticSymbol{row, 3, "row"}}};
  expect_schedule_error([&] { schedule::apply(by_static, Stage{x->id, col, true}); }, {"depends on a static index"});
}

TEST(Partition, SegmentsCoverTheLoopInOrder) {
  Elementwise e(7, 3);
  const auto out = schedule::apply(e.routine(), Partition{e.i, {2, 5}});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "in [0, 2):")) << text;
  EXPECT_TRUE(has(text, "in [2, 5):")) << text;
  EXPECT_TRUE(has(text, "in [5, 7):")) << text;
  expect_same(e.routine(), out);
  expect_schedule_error([&] { schedule::apply(e.routine(), Partition{e.i, {5, 2}}); }, {"breakpoints must increase", "[1, 6]"});
  const auto grid = schedule::apply(e.routine(), Retype{e.i, ir::AxisType::Grid});
  expect_schedule_error([&] { schedule::apply(grid, Partition{e.i, {3}}); }, {"would not start at 0"});
}

// partition mints every segment's loops ahead, so a plan can address the segments (retype the
// tail's inner loop) with symbols that a recorded trace names too.
TEST(Partition, MintedSegmentLoopsAreTheOnesTheCopiesTake) {
  Elementwise e(7, 3);
  const ir::LoweredRoutine r = e.routine();
  const Partition p = partition(std::get<ir::For>(r.body->node), {5});
  ASSERT_EQ(p.segment_loops.size(), 2u);
  ASSERT_EQ(p.segment_loops[1].size(), 2u);  // the tail's i and j
  const std::vector<Transform> plan{p, Retype{p.segment_loops[1][1], ir::AxisType::Vectorized}};
  const auto out = schedule::apply(r, plan);
  EXPECT_TRUE(has(ir::print_loop_ir(out), "in [5, 7):\n  for i3 in [0, 3) vectorized:")) << ir::print_loop_ir(out);
  expect_same(r, out);
  EXPECT_EQ(ir::print_loop_ir(replay(r, record(r, plan))), ir::print_loop_ir(out));
  Partition short_of_loops = p;
  short_of_loops.segment_loops[0].pop_back();
  expect_schedule_error([&] { schedule::apply(r, short_of_loops); }, {"segment 0 has 2 loops", "names 1"});
  Partition short_of_segments = p;
  short_of_segments.segment_loops.pop_back();
  expect_schedule_error([&] { schedule::apply(r, short_of_segments); }, {"loops of 1 segments for 2"});
}

TEST(Privatize, AccumulatorCellLivesInALocalBitwise) {
  RowSum rs(3, 7);
  const auto out = schedule::apply(rs.routine(), Privatize{rs.s->id, rs.r});
  const std::string text = ir::print_loop_ir(out);
  EXPECT_TRUE(has(text, "  declare v0:f32\n  v0 := s[i0]\n  for i1 in [0, 7):\n    v0 := add(v0, x[i0, i1])\n  s[i0] = v0")) << text;
  expect_same(rs.routine(), out);
  expect_schedule_error([&] { schedule::apply(rs.routine(), Privatize{rs.s->id, rs.i}); }, {"more than one cell"});
  expect_schedule_error([&] { schedule::apply(rs.routine(), Privatize{rs.x->id, rs.r}); }, {"more than one cell", ">>   for i1"});
  const auto grid = schedule::apply(rs.routine(), Retype{rs.i, ir::AxisType::Grid});
  expect_schedule_error([&] { schedule::apply(grid, Privatize{rs.s->id, rs.i}); }, {"the loop is parallel"});
}

TEST(Privatize, AGuardOfAnOuterLoopIsAScheduleError) {
  RowSum rs(3, 7);
  // Padding the row loop guards the accumulation by i0 < 3: an unguarded load of s[3] before
  // the privatized loop would read past the end.
  const auto padded_rows = schedule::apply(rs.routine(), Pad{rs.i, 4});
  expect_schedule_error([&] { schedule::apply(padded_rows, Privatize{rs.s->id, rs.r}); },
                        {"under a guard that depends on loops around it", ">>   for i1"});
  // A guard of the privatized loop itself keeps the cell fixed: still bitwise.
  const auto padded_sum = schedule::apply(rs.routine(), Pad{rs.r, 4});
  expect_same(rs.routine(), schedule::apply(padded_sum, Privatize{rs.s->id, rs.r}));
}

}  // namespace
}  // namespace cannl::schedule::testing
