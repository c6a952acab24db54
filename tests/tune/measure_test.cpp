// How a candidate is timed (src/tune/measure.cpp): on the clock, without TuneHooks::measure.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
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

/// A matmul tuned on the clock with one extra candidate, `label`, whose runs `before_run` may slow
/// down (it is told the run's number); the extra candidate as judged in the search, before any
/// final round, and how many times it ran until then.
struct JudgedExtra {
  tune::CandidateResult result;
  int runs = 0;
};
JudgedExtra judge_extra(tune::TuneOptions o, const std::function<void(std::int64_t run)>& before_run) {
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  o.use_cache = false;
  o.budget_s = 1e6;
  o.hooks.extra_seeds = [](const ir::LoweredRoutine& optimized, const ir::Target& target) {
    return std::vector<tune::Candidate>{
        {"extra", target, schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), 4)})}};
  };
  std::optional<tune::CandidateResult> judged;
  int runs = 0;
  o.hooks.before_run = [&](const tune::Candidate& c, std::int64_t run) {
    if (c.label != "extra") return;
    if (!judged) ++runs;
    before_run(run);
  };
  o.hooks.on_candidate = [&](const tune::CandidateResult& c) {
    if (c.label == "extra") judged = c;
  };
  (void)tune::tune(ctx, m.comp, "mm", o);
  if (!judged) throw std::runtime_error("the extra candidate was never judged");
  return {*judged, runs};
}

TEST_F(Tune, ASlowFirstRunIsNotTheOneJudged) {
  // Its first run (just loaded, first touches) takes 30 ms, its later ones as long as the matmul:
  // far more than 4 times the default's median first, then nowhere near it.
  const JudgedExtra judged = judge_extra(quick(), [](std::int64_t run) {
    if (run == 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kSlowFirstRunMs));
  });
  ASSERT_EQ(judged.result.verdict, tune::Verdict::Measured) << judged.result.why;
  ASSERT_TRUE(judged.result.same_code_as.empty()) << judged.result.why;
  EXPECT_LT(judged.result.ms, kSlowFirstRunMs / 2) << "its warm runs were timed, not its first";
}

// A run far beyond what first touches can explain is hopeless warm too: no second run is spent
// on it (a serial baseline of a large matmul runs for seconds).
TEST_F(Tune, ARunFarAboveTheHopelessLineIsNotRunAgain) {
  const JudgedExtra judged =
      judge_extra(quick(), [](std::int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
  ASSERT_TRUE(judged.result.same_code_as.empty()) << judged.result.why;
  EXPECT_EQ(judged.runs, 1) << "only its checked run";
}

}  // namespace
}  // namespace cannl
