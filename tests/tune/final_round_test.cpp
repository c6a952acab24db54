// The budget covers the final round: its plan (plan_final_round: finalists first, then rounds,
// never the default or the serial baseline) and a tune on a fake clock that never ends past its
// budget, the default timed again in the round that picks the winner.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cannl/cannl.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "cannl/tune/tune.h"
#include "tune/final_round.h"
#include "tune/tune_fixture.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using tune::FinalistCost;
using tune::FinalRoundPlan;
using tune::plan_final_round;
using tune_test::Matmul;
using tune_test::matmul;
using tune_test::outermost_loop;
using tune_test::Tune;

void expect_plan(const FinalRoundPlan& plan, int optional, int rounds, double cost_s) {
  EXPECT_EQ(plan.optional, optional);
  EXPECT_EQ(plan.rounds, rounds);
  EXPECT_DOUBLE_EQ(plan.cost_s, cost_s);
}

TEST(FinalRoundPlan, DropsCandidatesThenRoundsNeverTheRequired) {
  const std::vector<FinalistCost> required{{0, 1}, {0, 1}}, optional{{0, 1}, {0, 1}, {0, 1}};
  expect_plan(plan_final_round(required, optional, 5, 100), 3, 5, 25);
  {
    SCOPED_TRACE("the slower candidates left out");
    expect_plan(plan_final_round(required, optional, 5, 15), 1, 5, 15);
  }
  {
    SCOPED_TRACE("the fastest alone in fewer rounds");
    expect_plan(plan_final_round(required, optional, 5, 8), 1, 2, 6);
  }
  {
    SCOPED_TRACE("no room for one round of three");
    expect_plan(plan_final_round(required, optional, 5, 2), 0, 0, 0);
  }
  {
    SCOPED_TRACE("the default and the baseline alone");
    expect_plan(plan_final_round(required, {}, 5, 100), 0, 5, 10);
  }
}

TEST(FinalRoundPlan, CountsEachFinalistsSetupOnce) {
  const std::vector<FinalistCost> required{{2, 1}}, optional{{3, 0.5}};
  expect_plan(plan_final_round(required, optional, 5, 100), 1, 5, 2 + 5 * 1 + 3 + 5 * 0.5);
  expect_plan(plan_final_round(required, optional, 5, 9), 1, 2, 2 + 2 + 3 + 1);
}

/// The outermost loop of matmul(40) split by 2, 4, 5, 8 and 10: code other than the default's,
/// the default's bits.
std::vector<tune::Candidate> splits(const ir::LoweredRoutine& optimized, const ir::Target& target) {
  std::vector<tune::Candidate> out;
  for (std::int64_t factor : {2, 4, 5, 8, 10})
    out.push_back({"split " + std::to_string(factor), target,
                   schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), factor)})});
  return out;
}

TEST_F(Tune, TheBudgetCoversTheFinalRound) {
  config::set_override("cc_vector_bytes", "0");  // plain loops: the serial baseline has the default's code
  Matmul m = matmul(40);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  o.beam_width = 2;
  o.budget_s = 12;
  o.hooks.extra_seeds = splits;
  // Every timing takes a second of the fake clock, in the search and in the final round alike:
  // five rounds of the default and one candidate are 10 s, which the search must leave.
  double now = 0;
  const std::map<std::string, double> ms{{"default", 5},   {"split 2", 4},  {"split 4", 3},
                                         {"split 5", 3.5}, {"split 8", 2.5}, {"split 10", 6}};
  o.hooks.clock_s = [&] { return now; };
  o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>&) {
    now += 1;
    return ms.at(c.label);
  };
  o.hooks.measure_final = [&](const tune::Candidate& c, const std::function<void()>&) {
    now += 1;
    return ms.at(c.label);
  };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  EXPECT_LE(now, o.budget_s) << "the search and the final round together";
  EXPECT_LE(report.search_s, o.budget_s);
  EXPECT_TRUE(report.out_of_budget) << "the search stopped to leave the final round its time";
  bool searched = false;
  for (const auto& c : report.candidates) searched |= c.label.starts_with("split");
  EXPECT_TRUE(searched) << "a candidate was judged before the budget ran short";
  const tune::CandidateResult* default_result = nullptr;
  for (const auto& c : report.candidates)
    if (c.label == "default") default_result = &c;
  ASSERT_NE(default_result, nullptr);
  EXPECT_TRUE(default_result->final_round) << "the default is timed again beside the candidates";
  EXPECT_TRUE(report.winner.final_round);
  EXPECT_EQ(report.winner.label, "split 2");
}

}  // namespace
}  // namespace cannl
