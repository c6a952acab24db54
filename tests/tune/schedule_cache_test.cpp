// The schedule cache: a second tune replays the first's winner without measuring, a damaged
// entry is searched again and rewritten, and the key holds everything the winner depends on.
#include <gtest/gtest.h>

#include <filesystem>

#include "cannl/backends/cc_backend.h"
#include "cannl/cannl.h"
#include "cannl/support/files.h"
#include "cannl/tune/schedule_cache.h"
#include "cannl/tune/tune.h"
#include "tune/tune_fixture.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using tune_test::Matmul;
using tune_test::matmul;
using tune_test::run_and_read;
using tune_test::Tune;

TEST_F(Tune, TheSecondTuneOfTheSameProgramMeasuresNothing) {
  int measured = 0;
  auto options = [&] {
    tune::TuneOptions o = quick();
    o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>&) {
      ++measured;
      return c.label == "serial" ? 1.0 : 2.0;  // a winner other than the default, to be replayed
    };
    return o;
  };
  std::vector<std::byte> first_bytes;
  {
    Matmul m = matmul(32);
    auto ctx = runtime::Context::cpu();
    train::upload_literals(ctx, {m.y});
    tune::TuneReport report;
    first_bytes = run_and_read(ctx, tune::tune(ctx, m.comp, "mm", options(), &report), m.y);
    EXPECT_EQ(report.outcome, tune::TuneReport::Outcome::Searched);
    EXPECT_EQ(report.winner.label, "serial");
    EXPECT_GT(measured, 0);
    EXPECT_TRUE(std::filesystem::exists(tune::cached_schedule_path(cache_dir_, report.cache_key)));
  }
  // The same program in a fresh context: a replay, and the winner's library is in the compile
  // cache.
  auto replay = [&](const Matmul& m, tune::TuneReport& report) {
    auto ctx = runtime::Context::cpu();
    train::upload_literals(ctx, {m.y});
    measured = 0;
    const runtime::Routine r = tune::tune(ctx, m.comp, "mm", options(), &report);
    return run_and_read(ctx, r, m.y);
  };
  reset_tensor_state();
  Matmul m = matmul(32);
  {
    tune::TuneReport first;
    replay(m, first);
    const int compiler_runs = backends::cc::compiler_invocations();
    tune::TuneReport report;
    EXPECT_EQ(replay(m, report), first_bytes);
    EXPECT_EQ(report.outcome, tune::TuneReport::Outcome::CacheReplay);
    EXPECT_EQ(report.compiles, 0);
    EXPECT_EQ(measured, 0);
    EXPECT_EQ(report.winner.label, "serial");
    EXPECT_EQ(backends::cc::compiler_invocations(), compiler_runs) << "the winner's library is in the compile cache";
  }
  // The same program built again (other node ids, other symbols): the same key, a replay.
  reset_tensor_state();
  (void)ir::make_node("spent", ir::DType::F32, {1});
  Matmul rebuilt = matmul(32);
  tune::TuneReport report;
  EXPECT_EQ(replay(rebuilt, report), first_bytes);
  EXPECT_EQ(report.outcome, tune::TuneReport::Outcome::CacheReplay);
  EXPECT_EQ(measured, 0);
}

TEST_F(Tune, ADamagedCacheEntryIsIgnoredAndTunedAgain) {
  Matmul m = matmul(32);
  auto tune_fresh = [&](tune::TuneReport& report) {
    auto ctx = runtime::Context::cpu();
    train::upload_literals(ctx, {m.y});
    return run_and_read(ctx, tune::tune(ctx, m.comp, "mm", quick(), &report), m.y);
  };
  tune::TuneReport first;
  const auto want = tune_fresh(first);
  const auto path = tune::cached_schedule_path(cache_dir_, first.cache_key);
  ASSERT_TRUE(std::filesystem::exists(path));
  std::string text = files::read_file(path);
  text[text.size() / 2] ^= 1;  // one flipped bit: the checksum no longer matches
  files::write_atomically(path, text);
  testing::internal::CaptureStderr();
  tune::TuneReport second;
  const auto got = tune_fresh(second);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("is ignored"), std::string::npos) << warnings;
  EXPECT_EQ(second.outcome, tune::TuneReport::Outcome::Searched);
  EXPECT_GT(second.compiles, 0);
  EXPECT_EQ(got, want);
  // Rewritten whole: a third tune replays it.
  tune::TuneReport third;
  tune_fresh(third);
  EXPECT_EQ(third.outcome, tune::TuneReport::Outcome::CacheReplay);
}

TEST_F(Tune, TheCacheKeyChangesWithTargetLicenceToolchainAndMachine) {
  const std::string digest(64, 'a');
  ir::Target t = ir::cpu_target(32);
  const tune::MachineIdentity machine{"AMD EPYC 7B13 64-Core Processor", 16};
  const std::string key = tune::schedule_cache_key(digest, t, "gcc 13", machine);
  EXPECT_EQ(key, tune::schedule_cache_key(digest, t, "gcc 13", machine));
  EXPECT_NE(key, tune::schedule_cache_key(std::string(64, 'b'), t, "gcc 13", machine));
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "clang 18", machine));
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "gcc 13", {"Intel(R) Xeon(R) Platinum 8481C CPU", 16}))
      << "another CPU model";
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "gcc 13", {machine.cpu_model, 4})) << "another team";
  ir::Target other = t;
  other.threads = 3;
  EXPECT_NE(key, tune::schedule_cache_key(digest, other, "gcc 13", machine));
  EXPECT_NE(key, tune::schedule_cache_key(digest, ir::cpu_target(64), "gcc 13", machine));
  config::set_override("cpu_schedule_reassociate", "false");
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "gcc 13", machine));
}

TEST_F(Tune, AnEntryOfANarrowerSearchIsSearchedAgain) {
  Matmul m = matmul(32);
  auto tune_with_budget = [&](double budget_s) {
    auto ctx = runtime::Context::cpu();
    train::upload_literals(ctx, {m.y});
    tune::TuneOptions o = quick();
    o.budget_s = budget_s;
    tune::TuneReport report;
    (void)tune::tune(ctx, m.comp, "mm", o, &report);
    return report;
  };
  const tune::TuneReport cut = tune_with_budget(0);
  ASSERT_TRUE(cut.out_of_budget) << "only the default was measured";
  const tune::TuneReport wider = tune_with_budget(60);
  EXPECT_EQ(wider.outcome, tune::TuneReport::Outcome::Searched) << "the cut-short entry does not answer a wider search";
  EXPECT_GT(wider.compiles, 1);
  EXPECT_FALSE(wider.out_of_budget);
  // The entry was overwritten by the complete search: it answers the same and narrower ones.
  EXPECT_EQ(tune_with_budget(60).outcome, tune::TuneReport::Outcome::CacheReplay);
  EXPECT_EQ(tune_with_budget(0).outcome, tune::TuneReport::Outcome::CacheReplay);
}

TEST_F(Tune, ASearchWidthCoversNoWiderOne) {
  const tune::SearchWidth full{.complete = true, .budget_s = 10, .rounds = 2, .beam_width = 2, .sweep_target = true};
  EXPECT_TRUE(full.covers(full));
  EXPECT_TRUE(full.covers({.budget_s = 600, .rounds = 1, .beam_width = 2, .sweep_target = false}))
      << "it ended by itself: a larger budget would not have changed it";
  EXPECT_FALSE(full.covers({.budget_s = 10, .rounds = 3, .beam_width = 2, .sweep_target = true}));
  EXPECT_FALSE(full.covers({.budget_s = 10, .rounds = 2, .beam_width = 4, .sweep_target = true}));
  tune::SearchWidth no_sweeps = full;
  no_sweeps.sweep_target = false;
  EXPECT_FALSE(no_sweeps.covers(full));
  tune::SearchWidth cut = full;
  cut.complete = false;
  EXPECT_TRUE(cut.covers({.budget_s = 5, .rounds = 2, .beam_width = 2}));
  EXPECT_FALSE(cut.covers({.budget_s = 20, .rounds = 2, .beam_width = 2}));
}

TEST_F(Tune, ATuneWithoutTheCacheCreatesNoCacheFolder) {
  const std::filesystem::path dir = cache_dir_ / "configured";
  config::set_override("autotune_cache_dir", dir.string());
  Matmul m = matmul(8);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.cache_dir.clear();  // the configured folder
  o.use_cache = false;
  o.budget_s = 0;
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace cannl
