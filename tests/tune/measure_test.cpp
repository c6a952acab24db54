// How a candidate is timed (src/tune/measure.cpp): on the clock, without TuneHooks::measure.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "cannl/cannl.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "cannl/tune/tune.h"
#include "tune/tune_fixture.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using tune_test::Matmul;
using tune_test::matmul;
using tune_test::outermost_loop;
using tune_test::Tune;

// Within what a first run may spend on first touches (measure.cpp, kFirstRunOverheadMs).
constexpr double kSlowFirstRunMs = 30;

TEST_F(Tune, ASlowFirstRunIsNotTheOneJudged) {
  // Its first run (just loaded, first touches) takes 30 ms, its later ones as long as the matmul:
  // far more than 4 times the default's median first, then nowhere near it.
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  o.budget_s = 1e6;
  o.hooks.extra_seeds = [](const ir::LoweredRoutine& optimized, const ir::Target& target) {
    return std::vector<tune::Candidate>{
        {"slow start", target, schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), 4)})}};
  };
  o.hooks.before_run = [](const tune::Candidate& c, std::int64_t run) {
    if (c.label == "slow start" && run == 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kSlowFirstRunMs));
  };
  std::optional<tune::CandidateResult> judged;  // as judged, before any final round
  o.hooks.on_candidate = [&](const tune::CandidateResult& c) {
    if (c.label == "slow start") judged = c;
  };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  ASSERT_TRUE(judged.has_value());
  ASSERT_EQ(judged->verdict, tune::Verdict::Measured) << judged->why;
  ASSERT_TRUE(judged->same_code_as.empty()) << judged->why;
  EXPECT_LT(judged->ms, kSlowFirstRunMs / 2) << "its warm runs were timed, not its first";
}

// A run far beyond what first touches can explain is hopeless warm too: no second run is spent
// on it (a serial baseline of a large matmul runs for seconds).
TEST_F(Tune, ARunFarAboveTheHopelessLineIsNotRunAgain) {
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  o.budget_s = 1e6;
  o.hooks.extra_seeds = [](const ir::LoweredRoutine& optimized, const ir::Target& target) {
    return std::vector<tune::Candidate>{
        {"slow", target, schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), 4)})}};
  };
  int runs_before_judged = 0;
  std::optional<tune::CandidateResult> judged;
  o.hooks.before_run = [&](const tune::Candidate& c, std::int64_t) {
    if (c.label != "slow") return;
    if (!judged) ++runs_before_judged;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };
  o.hooks.on_candidate = [&](const tune::CandidateResult& c) {
    if (c.label == "slow") judged = c;
  };
  (void)tune::tune(ctx, m.comp, "mm", o);
  ASSERT_TRUE(judged.has_value());
  ASSERT_TRUE(judged->same_code_as.empty()) << judged->why;
  EXPECT_EQ(runs_before_judged, 1) << "only its checked run";
}

}  // namespace
}  // namespace cannl
