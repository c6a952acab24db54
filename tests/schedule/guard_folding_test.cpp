// Guard folding after scheduling (opt::fold_guards): the remainder and pad guards that later
// transforms make decidable disappear, guards that never hold take their bodies with them,
// dynamic rows proven in range become plain accesses; and on random scheduled programs the
// folded routine computes the same bits as the scheduled one on the interpreter.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cannl/ir/lower.h"
#include "cannl/ir/tree_mapper.h"
#include "cannl/opt/fold_guards.h"
#include "cannl/opt/optimize.h"
#include "cannl/schedule/transforms.h"
#include "opt/program_generator.h"
#include "schedule/loop_tree.h"
#include "schedule/schedule_test_util.h"

namespace cannl::schedule::testing {
namespace {

using namespace cannl::ir;

int count_ifs(const LoweredRoutine& r) {
  int n = 0;
  for_each_stmt(r.body, [&](const Stmt& s) { n += std::holds_alternative<If>(s.node) ? 1 : 0; });
  return n;
}

int count_dynamic(const LoweredRoutine& r) {
  int n = 0;
  for_each_stmt(r.body, [&](const Stmt& s) { n += std::holds_alternative<SetDynamic>(s.node) ? 1 : 0; });
  for_each_scalar(r.body, [&](const Scalar& s) { n += std::holds_alternative<GetDynamic>(s.node) ? 1 : 0; });
  return n;
}

// out[i] = a[i] * 2 over n elements.
LoweredRoutine doubled(const NodeRef& a, const NodeRef& out, std::int64_t n, Symbol i) {
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  return {"doubled", for_loop(i, 0, n, set(out, at, apply(Op::Mul, DType::F32, {get(a, at), constant(2, DType::F32)}))), {}};
}

TEST(GuardFolding, PartitionedRemainderKeepsOnlyTheLastBlocksGuard) {
  auto a = make_node("a", DType::F32, {10});
  auto out = make_node("out", DType::F32, {10});
  const Symbol i = fresh_symbol();
  const LoweredRoutine r = doubled(a, out, 10, i);
  const Split s = split(i, 4);  // 3 blocks of 4, the last one guarded by 4*o + i < 10
  LoweredRoutine scheduled = schedule::apply(r, s);
  scheduled = schedule::apply(scheduled, Partition{s.outer, {2}});  // blocks 0-1 full, block 2 partial
  ASSERT_EQ(count_ifs(scheduled), 2);
  const LoweredRoutine folded = opt::fold_guards(scheduled);
  EXPECT_EQ(count_ifs(folded), 1) << print_loop_ir(folded);
  EXPECT_EQ(compare(run_interp(scheduled), run_interp(folded), Tolerance::Bitwise), "");
  EXPECT_EQ(compare(run_interp(r), run_interp(folded), Tolerance::Bitwise), "");
}

// A logic op tests its arguments converted to its compute dtype: the f32 constant 0.5 is 0 as an
// i32, so not:i32(0.5) holds and and:i32(0.5, i < 10) does not.
TEST(GuardFolding, LogicOperandsAreTestedInTheOpsDtype) {
  auto out = make_node("out", DType::F32, {10});
  const Symbol i = fresh_symbol();
  const std::vector<AxisIndex> at{AxisIndex::iterator(i)};
  const auto half = constant(0.5, DType::F32);
  const auto in_range = apply(Op::Cmplt, DType::I64, {embed_index(at[0]), constant_bits(10, DType::I64)});
  const auto body = seq({if_then(apply(Op::Not, DType::I32, {half}), set(out, at, constant(1, DType::F32))),
                         if_then(apply(Op::And, DType::I32, {half, in_range}), set(out, at, constant(2, DType::F32)))});
  const LoweredRoutine r{"logic", for_loop(i, 0, 10, body), {}};
  const LoweredRoutine folded = opt::fold_guards(r);
  EXPECT_EQ(compare(run_interp(r), run_interp(folded), Tolerance::Bitwise), "") << print_loop_ir(folded);
}

TEST(GuardFolding, ADividingSplitOfAPaddedLoopFoldsNothingItCannotProve) {
  auto a = make_node("a", DType::F32, {10});
  auto out = make_node("out", DType::F32, {10});
  const Symbol i = fresh_symbol();
  const LoweredRoutine r = doubled(a, out, 10, i);
  const LoweredRoutine padded = schedule::apply(r, Pad{i, 8});  // 16 iterations, guarded by i < 10
  ASSERT_EQ(count_ifs(padded), 1);
  EXPECT_EQ(count_ifs(opt::fold_guards(padded)), 1);  // iterations 10..15 exist: it stays
  // Partitioned at the old end, the pad iterations are a loop of guards that never hold: gone,
  // and the guards of the real iterations always hold: gone too.
  const LoweredRoutine parts = schedule::apply(padded, Partition{i, {10}});
  const LoweredRoutine folded = opt::fold_guards(parts);
  EXPECT_EQ(count_ifs(folded), 0) << print_loop_ir(folded);
  int loops = 0;
  for_each_stmt(folded.body, [&](const Stmt& s) { loops += std::holds_alternative<For>(s.node) ? 1 : 0; });
  EXPECT_EQ(loops, 1) << print_loop_ir(folded);
  EXPECT_EQ(compare(run_interp(parts), run_interp(folded), Tolerance::Bitwise), "");
}

TEST(GuardFolding, LoopAnnotationsAndChunksSurvive) {
  auto a = make_node("a", DType::F32, {10});
  auto out = make_node("out", DType::F32, {10});
  const Symbol i = fresh_symbol();
  LoweredRoutine r = doubled(a, out, 10, i);
  const Split s = split(i, 4, AxisType::Grid, AxisType::Serial);
  r = schedule::apply(schedule::apply(r, s), Partition{s.inner, {2}});
  // The final lowering round's facts on the Grid loop (as a tuned target would leave them).
  For grid = std::get<For>(r.body->node);
  grid.chunks = 3;
  grid.team = 2;
  r.body = std::make_shared<const Stmt>(Stmt{grid});
  const LoweredRoutine folded = opt::fold_guards(r);
  ASSERT_LT(count_ifs(folded), count_ifs(r)) << print_loop_ir(folded);  // the first inner segment's guard went
  const auto* kept = std::get_if<For>(&folded.body->node);
  ASSERT_NE(kept, nullptr) << print_loop_ir(folded);
  EXPECT_EQ(kept->axis, AxisType::Grid);
  EXPECT_EQ(kept->chunks, 3);
  EXPECT_EQ(kept->team, 2);
}

TEST(GuardFolding, DynamicRowsProvenInRangeBecomePlainAccesses) {
  auto table = make_node("table", DType::F32, {6, 3});
  auto out = make_node("out", DType::F32, {4, 3});
  auto grad = make_node("grad", DType::F32, {6, 3});
  const Symbol i = fresh_symbol(), j = fresh_symbol();
  const std::vector<AxisIndex> ij{AxisIndex::iterator(i), AxisIndex::iterator(j)};
  const std::vector<AxisIndex> row0j{AxisIndex::fixed(0), AxisIndex::iterator(j)};
  // Rows i + 2 (in [2, 5]: inside 6 rows) through an f32 conversion, and i + 3 (up to 6: not).
  const auto in_range = apply(Op::Identity, DType::F32, {embed_index(AxisIndex{{{1, i}}, 2})});
  const auto beyond = embed_index(AxisIndex{{{1, i}}, 3});
  const LoweredRoutine r{
      "rows",
      for_loop(i, 0, 4, for_loop(j, 0, 3, seq({
          set(out, ij, apply(Op::Add, DType::F32, {get_dynamic(table, row0j, 0, in_range), get_dynamic(table, row0j, 0, beyond)})),
          set_dynamic(grad, row0j, 0, in_range, get(out, ij)),
          set_dynamic(grad, row0j, 0, beyond, get(out, ij))}))),
      {}};
  ASSERT_EQ(count_dynamic(r), 4);
  const LoweredRoutine folded = opt::fold_guards(r);
  EXPECT_EQ(count_dynamic(folded), 2) << print_loop_ir(folded);
  EXPECT_EQ(compare(run_interp(r), run_interp(folded), Tolerance::Bitwise), "");
}

ir::LoweredRoutine program(std::uint64_t seed) {
  const auto p = opt::testing::generate_program(seed, "");
  return opt::optimize(ir::lower(p.comp, "generated"), opt::PassContext::from_config("generated"), true).routine;
}

// Random Split / Pad / Partition / Unroll chains: folding never changes a bit, and it folds.
TEST(GuardFolding, RandomScheduledProgramsFoldBitwise) {
  std::mt19937_64 rng(11);
  auto number = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int guards_before = 0, guards_after = 0;
  for (std::uint64_t seed = 0; seed < 120 && !HasFailure(); ++seed) {
    LoweredRoutine current = program(5000 + seed);
    for (int step = 0; step < 5; ++step) {
      const auto loops = detail::canonical_loops(current.body);
      if (loops.empty()) break;
      const Symbol s = loops[static_cast<std::size_t>(number(0, static_cast<std::int64_t>(loops.size()) - 1))];
      const auto site = detail::find_loop(current.body, s);
      const std::int64_t extent = site->loop->end - site->loop->begin;
      Transform t = Retype{s, AxisType::Serial};
      switch (number(0, 3)) {
        case 0: t = split(s, number(1, extent)); break;
        case 1: t = Pad{s, number(2, 5)}; break;
        case 2: t = Partition{s, {site->loop->begin + number(1, std::max<std::int64_t>(1, extent - 1))}}; break;
        default: t = Unroll{s, false}; break;
      }
      try {
        current = schedule::apply(current, t);
      } catch (const ScheduleError&) {
      }
    }
    const LoweredRoutine folded = opt::fold_guards(current);
    guards_before += count_ifs(current);
    guards_after += count_ifs(folded);
    EXPECT_EQ(compare(run_interp(current), run_interp(folded), Tolerance::Bitwise), "")
        << "seed " << 5000 + seed << "\n" << print_loop_ir(current) << "\nfolded\n" << print_loop_ir(folded);
  }
  EXPECT_LT(guards_after, guards_before) << "no guard was ever folded: the test would not check folding";
  std::printf("guards: %d scheduled, %d after folding\n", guards_before, guards_after);
}

}  // namespace
}  // namespace cannl::schedule::testing
