// The tuner: a tuned routine computes the default schedule's bits, a wrong candidate never wins,
// the winner is picked by the final round's times only, the budget bounds the search, the
// config keys (the schedule cache: schedule_cache_test.cpp; timing: measure_test.cpp).
// Nothing here depends on which candidate is faster on this machine: timings are injected
// (TuneHooks::measure) wherever the winner matters.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include <unistd.h>

#include "cannl/backends/cc_backend.h"
#include "cannl/cannl.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"
#include "cannl/support/files.h"
#include "cannl/tune/schedule_cache.h"
#include "cannl/tune/tune.h"
#include "tune/candidates.h"
#include "tune/tune_fixture.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

using tune_test::gaussian;
using tune_test::Matmul;
using tune_test::matmul;
using tune_test::outermost_loop;
using tune_test::run_and_read;
using tune_test::Tune;

TEST_F(Tune, TunedMatmulIsBitwiseTheDefaultWithoutTheLicence) {
  config::set_override("cpu_schedule_reassociate", "false");
  Matmul m = matmul(48);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.rounds = 1;
  o.beam_width = 1;
  o.budget_s = 20;
  // The winner must not depend on this machine's timings: each timing is faster than the last.
  int judged = 0;
  o.hooks.measure = [&](const tune::Candidate&, const std::function<void()>& run) {
    run();
    return 100.0 - ++judged;
  };
  tune::TuneReport report;
  const runtime::Routine tuned = tune::tune(ctx, m.comp, "mm", o, &report);
  EXPECT_EQ(report.outcome, tune::TuneReport::Outcome::Searched);
  ASSERT_GE(report.candidates.size(), 2u);
  EXPECT_EQ(report.candidates[0].label, "default") << "the default is judged first: it is the reference";
  EXPECT_EQ(report.winner.verdict, tune::Verdict::Measured);
  for (const auto& c : report.candidates)
    EXPECT_NE(c.verdict, tune::Verdict::WrongResult) << c.label << ": " << c.why << "\n" << c.trace;

  auto plain = runtime::Context::cpu();
  train::upload_literals(plain, {m.y});
  const runtime::Routine def = plain.compile(m.comp, "mm");
  EXPECT_EQ(run_and_read(ctx, tuned, m.y), run_and_read(plain, def, m.y));
}

TEST_F(Tune, APlantedWrongCandidateNeverWins) {
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.hooks.extra_seeds = [](const ir::LoweredRoutine& optimized, const ir::Target& target) {
    ir::Target other = target;
    other.gemm.kc = 64;  // other code than the serial baseline (its kernel library), the same results
    return std::vector<tune::Candidate>{{"planted", other, schedule::record(optimized, {})}};
  };
  const ir::NodeRef y = m.y.value();
  // A sentinel in the caller's y: the planted candidate writes zeros into its twin's y.
  const std::vector<double> sentinel(32 * 32, 7.0);
  ctx.set_values(y, sentinel);
  o.hooks.after_check_run = [&](const tune::Candidate& c, runtime::Context& twin, const runtime::Routine&) {
    if (c.label == "planted") twin.set_values(y, std::vector<double>(32 * 32, 0.0));
  };
  // The planted candidate would be by far the fastest.
  o.hooks.measure = [](const tune::Candidate& c, const std::function<void()>&) { return c.label == "planted" ? 0.001 : 5.0; };
  tune::TuneReport report;
  const runtime::Routine r = tune::tune(ctx, m.comp, "mm", o, &report);
  ASSERT_EQ(report.candidates.size(), 3u);
  EXPECT_EQ(report.candidates[2].label, "planted");
  EXPECT_EQ(report.candidates[2].verdict, tune::Verdict::WrongResult);
  EXPECT_NE(report.candidates[2].why.find("'"), std::string::npos) << report.candidates[2].why;
  EXPECT_NE(report.winner.label, "planted");
  // The caller's context was never written by the search: y still holds the sentinel...
  EXPECT_EQ(ctx.get_values(y), sentinel);
  // ... until the tuned routine runs there and writes the product.
  ctx.run(r);
  EXPECT_NE(ctx.get_values(y), sentinel);
  EXPECT_NE(ctx.get_values(y)[0], 0.0);
}

TEST_F(Tune, ANoBudgetSearchMeasuresOnlyTheDefault) {
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.sweep_target = true;
  o.rounds = 2;
  o.budget_s = 0;
  tune::TuneReport report;
  tune::tune(ctx, m.comp, "mm", o, &report);
  ASSERT_EQ(report.candidates.size(), 1u);
  EXPECT_EQ(report.candidates[0].label, "default");
  EXPECT_EQ(report.winner.label, "default");
  EXPECT_TRUE(report.out_of_budget);
  EXPECT_EQ(report.compiles, 1);
}

/// Seeds for matmul(40) with scalar tiles (cc_vector_bytes 0; plain loops, so the serial baseline
/// has the default's code too): the default schedule under another tile threshold, which a
/// replayed trace does not read ("default's code": the default's own code), and the outermost
/// loop split by 2, 4 and 8 (other code, the default's bits).
std::vector<tune::Candidate> seeds_with_and_without_the_defaults_code(const ir::LoweredRoutine& optimized,
                                                                        const ir::Target& target) {
  ir::Target threshold = target;
  threshold.min_tile_work = target.min_tile_work + 1;
  std::vector<tune::Candidate> out{{"default's code", threshold, tune::default_trace(optimized, target)}};
  for (std::int64_t factor : {2, 4, 8})
    out.push_back({"split " + std::to_string(factor), target,
                   schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), factor)})});
  return out;
}

/// Tunes matmul(40) with those seeds, timed by `search_ms` while searching and by `final_ms` in
/// the final round (by label; a label missing from `final_ms` takes its search time).
tune::TuneReport tune_with_times(const tune::TuneOptions& quick, const std::map<std::string, double>& search_ms,
                                 const std::map<std::string, double>& final_ms) {
  config::set_override("cc_vector_bytes", "0");
  Matmul m = matmul(40);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick;
  o.use_cache = false;
  o.beam_width = 2;  // two finalists besides the default and the serial baseline
  o.hooks.extra_seeds = seeds_with_and_without_the_defaults_code;
  o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>&) { return search_ms.at(c.label); };
  o.hooks.measure_final = [&](const tune::Candidate& c, const std::function<void()>&) {
    return final_ms.contains(c.label) ? final_ms.at(c.label) : search_ms.at(c.label);
  };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  return report;
}

const tune::CandidateResult& result_of(const tune::TuneReport& report, const std::string& label) {
  for (const auto& c : report.candidates)
    if (c.label == label) return c;
  throw std::runtime_error("no candidate '" + label + "' was judged");
}

TEST_F(Tune, TheWinnerIsPickedAmongTheFinalRoundsTimesOnly) {
  // The machine got busier after the search: every final time is about twice the search's. A
  // candidate left out of the final round (split 8) keeps a search time that looks fastest.
  const tune::TuneReport report = tune_with_times(
      quick(), {{"default", 5}, {"split 2", 3}, {"split 4", 4}, {"split 8", 4.5}},
      {{"default", 10}, {"split 2", 9.4}, {"split 4", 12}});
  ASSERT_EQ(result_of(report, "default's code").same_code_as, "default") << result_of(report, "default's code").why;
  EXPECT_FALSE(result_of(report, "split 8").final_round) << "not among the two fastest";
  EXPECT_TRUE(result_of(report, "split 2").final_round);
  EXPECT_EQ(report.winner.label, "split 2") << "the fastest of the final round, 6% faster than the default there";
  EXPECT_TRUE(report.winner.final_round);
  EXPECT_EQ(report.tuned_ms, 9.4);
  EXPECT_EQ(report.default_ms, 10);
  // Scalar tiles are plain loops: the serial baseline has the default's code, and its time.
  ASSERT_EQ(result_of(report, "serial").same_code_as, "default");
  EXPECT_EQ(report.baseline_ms, 10);
}

TEST_F(Tune, ACandidateWithTheDefaultsCodeIsTheDefault) {
  // "default's code" copied the default's search time (5); the default is slower in the final
  // round, and nothing else beats it there.
  const tune::TuneReport report = tune_with_times(
      quick(), {{"default", 5}, {"split 2", 6}, {"split 4", 7}, {"split 8", 8}},
      {{"default", 10}, {"split 2", 11}, {"split 4", 12}});
  const tune::CandidateResult& same = result_of(report, "default's code");
  EXPECT_EQ(same.same_code_as, "default");
  EXPECT_FALSE(same.final_round);
  EXPECT_EQ(report.winner.label, "default");
  EXPECT_EQ(report.tuned_ms, 10);
}

TEST_F(Tune, TheSerialBaselineIsTimedInTheFinalRound) {
  Matmul m = matmul(32);  // a tile: the serial baseline has code of its own
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  const std::map<std::string, double> search{{"default", 2}, {"serial", 1}}, final{{"default", 3}, {"serial", 7}};
  o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>&) { return search.at(c.label); };
  o.hooks.measure_final = [&](const tune::Candidate& c, const std::function<void()>&) { return final.at(c.label); };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  ASSERT_TRUE(result_of(report, "serial").same_code_as.empty());
  EXPECT_EQ(report.baseline_ms, 7);
  EXPECT_EQ(report.default_ms, 3);
  EXPECT_EQ(report.winner.label, "default");
}

// A baseline four times slower than the default already (the serial run of a large matmul takes
// seconds) is not timed again: its search time is reported.
TEST_F(Tune, ABaselineBeyondHopeKeepsItsSearchTime) {
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  const std::map<std::string, double> search{{"default", 2}, {"serial", 9}}, final{{"default", 3}, {"serial", 7}};
  o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>&) { return search.at(c.label); };
  o.hooks.measure_final = [&](const tune::Candidate& c, const std::function<void()>&) { return final.at(c.label); };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  EXPECT_FALSE(result_of(report, "serial").final_round);
  EXPECT_EQ(report.baseline_ms, 9);
  EXPECT_EQ(report.default_ms, 2) << "the default alone: no final round";
}

TEST_F(Tune, TheSearchIsDeterministicGivenItsTimings) {
  auto search = [&] {
    Matmul m = matmul(8);  // no tile: the round's moves compile no kernel library
    auto ctx = runtime::Context::cpu();
    train::upload_literals(ctx, {m.y});
    tune::TuneOptions o = quick();
    o.use_cache = false;
    o.rounds = 1;
    o.beam_width = 2;
    o.budget_s = 1e6;
    o.hooks.measure = [](const tune::Candidate& c, const std::function<void()>&) {
      return static_cast<double>(std::hash<std::string>{}(c.label) % 1000);
    };
    tune::TuneReport report;
    tune::tune(ctx, m.comp, "mm", o, &report);
    std::vector<std::string> labels;
    for (const auto& c : report.candidates) labels.push_back(c.label);
    return std::make_pair(labels, report.winner.trace);
  };
  const auto first = search();
  reset_tensor_state();
  const auto second = search();
  EXPECT_EQ(first, second);
  EXPECT_GT(first.first.size(), 2u) << "the round proposed moves";
}

TEST_F(Tune, PackingALiteralOnceIsProposedBesidePackingPerCallAndMayWin) {
  config::set_override("cpu_schedule_reassociate", "false");
  Matmul m = matmul(8);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.use_cache = false;
  o.rounds = 1;
  o.beam_width = 1;
  o.budget_s = 1e6;
  o.hooks.measure = [](const tune::Candidate& c, const std::function<void()>& run) {
    run();
    return c.label.find("hoisted") != std::string::npos ? 1.0 : 5.0;
  };
  tune::TuneReport report;
  const runtime::Routine tuned = tune::tune(ctx, m.comp, "mm", o, &report);
  int per_call = 0, once = 0;
  for (const auto& c : report.candidates) {
    if (c.label.find("stage") == std::string::npos) continue;
    ++(c.label.find("hoisted") != std::string::npos ? once : per_call);
    EXPECT_NE(c.verdict, tune::Verdict::WrongResult) << c.label << ": " << c.why;
  }
  EXPECT_GT(per_call, 0);
  EXPECT_GT(once, 0);
  EXPECT_NE(report.winner.trace.find(" hoisted\n"), std::string::npos) << report.winner.trace;
  EXPECT_FALSE(tuned.lowered().packed.empty());
  auto plain = runtime::Context::cpu();
  train::upload_literals(plain, {m.y});
  EXPECT_EQ(run_and_read(ctx, tuned, m.y), run_and_read(plain, plain.compile(m.comp, "mm"), m.y));
}

TEST_F(Tune, APlacementSearchKeepsTheMaterializeAllArmWhenItIsFaster) {
  config::set_override("cpu_schedule_reassociate", "false");
  // relu(w * x) + 1: the product and the relu are inlined by default, stored under
  // materialize-all.
  auto build = [] {
    Tensor x = literal("x", gaussian(64, 1), {.batch = Dims{8}, .output = Dims{8}});
    Tensor w = literal("w", gaussian(64, 2), {.input = Dims{8}, .output = Dims{8}});
    Tensor y = relu(w * x) + 1.0;
    return std::make_pair(y, forward_code({y}));
  };
  auto [y, comp] = build();
  tune::TuneOptions o = quick();
  o.search_placements = true;
  o.hooks.measure = [](const tune::Candidate& c, const std::function<void()>& run) {
    run();
    return c.materialize_all ? 1.0 : 2.0;
  };
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {y});
  EXPECT_NE(schedule::program_digest(ctx.optimized_routine(comp, "f")),
            schedule::program_digest(ctx.optimized_routine(comp, "f", {.materialize_all = true})))
      << "the arms differ";
  tune::TuneReport report;
  const runtime::Routine tuned = tune::tune(ctx, comp, "f", o, &report);
  ASSERT_GE(report.candidates.size(), 2u);
  EXPECT_EQ(report.candidates[1].label, "materialize-all default");
  EXPECT_EQ(report.candidates[1].verdict, tune::Verdict::Measured) << report.candidates[1].why;
  EXPECT_EQ(report.winner.label, "materialize-all default");
  auto plain = runtime::Context::cpu();
  train::upload_literals(plain, {y});
  EXPECT_EQ(run_and_read(ctx, tuned, y), run_and_read(plain, plain.compile(comp, "f"), y));
  // The cache keeps the placement.
  auto again = runtime::Context::cpu();
  train::upload_literals(again, {y});
  tune::TuneReport replay;
  const runtime::Routine replayed = tune::tune(again, comp, "f", o, &replay);
  EXPECT_EQ(replay.outcome, tune::TuneReport::Outcome::CacheReplay);
  EXPECT_EQ(run_and_read(again, replayed, y), run_and_read(plain, plain.compile(comp, "f"), y));
}

TEST_F(Tune, TheInterpreterIsCompiledWithItsDefault) {
  Matmul m = matmul(4);
  auto ctx = runtime::Context::interpreter();
  train::upload_literals(ctx, {m.y});
  tune::TuneReport report;
  const runtime::Routine r = tune::tune(ctx, m.comp, "mm", quick(), &report);
  EXPECT_EQ(report.outcome, tune::TuneReport::Outcome::NotTunable);
  EXPECT_EQ(report.compiles, 0);
  auto plain = runtime::Context::interpreter();
  train::upload_literals(plain, {m.y});
  EXPECT_EQ(run_and_read(ctx, r, m.y), run_and_read(plain, plain.compile(m.comp, "mm"), m.y));
}

TEST_F(Tune, TheProgramDigestDoesNotDependOnNodeIds) {
  // Two layers: the op label repeats, so the printout names those nodes by position.
  auto digest = [] {
    Tensor x = literal("x", gaussian(16, 1), {.batch = Dims{4}, .output = Dims{4}});
    Tensor w = literal("w", gaussian(16, 2), {.input = Dims{4}, .output = Dims{4}});
    Tensor y = w * (w * x);
    auto ctx = runtime::Context::cpu();
    const auto routine = ctx.optimized_routine(forward_code({y}), "two");
    return std::make_pair(schedule::program_digest(routine), ir::print_loop_ir(routine));
  };
  const auto first = digest();
  reset_tensor_state();
  (void)ir::make_node("spent", ir::DType::F32, {1});  // later nodes get other ids
  const auto second = digest();
  EXPECT_EQ(first.first, second.first) << first.second << "\n" << second.second;
}

TEST_F(Tune, OptionsComeFromTheConfigKeysAndBadValuesAreErrors) {
  config::set_override("autotune_beam_width", "3");
  config::set_override("autotune_rounds", "5");
  config::set_override("autotune_repeats", "7");
  config::set_override("autotune_budget_s", "2.5");
  config::set_override("autotune_log", "true");
  config::set_override("autotune_cache", "false");
  config::set_override("autotune_cache_dir", "somewhere");
  config::set_override("autotune_placements", "true");
  const auto o = tune::TuneOptions::from_config();
  EXPECT_TRUE(o.search_placements);
  EXPECT_EQ(o.beam_width, 3);
  EXPECT_EQ(o.rounds, 5);
  EXPECT_EQ(o.repeats, 7);
  EXPECT_EQ(o.budget_s, 2.5);
  EXPECT_TRUE(o.log);
  EXPECT_FALSE(o.use_cache);
  EXPECT_EQ(o.cache_dir, "somewhere");
  config::set_override("autotune_repeats", "0");
  EXPECT_THROW(tune::TuneOptions::from_config(), ConfigError);
  config::set_override("autotune_repeats", "1");
  config::set_override("autotune_budget_s", "-1");
  EXPECT_THROW(tune::TuneOptions::from_config(), ConfigError);
  config::set_override("autotune_budget_s", "soon");
  EXPECT_THROW(tune::TuneOptions::from_config(), ConfigError);
}

TEST_F(Tune, TheLogListsEveryCandidate) {
  config::set_override("autotune_log", "true");
  Matmul m = matmul(32);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  const auto log = files::log_dir() / "autotune.log";
  std::filesystem::remove(log);
  tune::TuneOptions o = quick();
  o.use_cache = false;
  tune::TuneReport report;
  tune::tune(ctx, m.comp, "mm", o, &report);
  const std::string text = files::read_file(log);
  for (const auto& c : report.candidates) EXPECT_NE(text.find(c.label + " | "), std::string::npos) << text;
  EXPECT_NE(text.find("cannl-schedule 1"), std::string::npos) << "each candidate's trace";
  EXPECT_NE(tune::format_report(report).find("winner: "), std::string::npos);
}

/// A build folder of its own (an empty compile cache), removed at the end.
class FreshBuildFiles {
 public:
  explicit FreshBuildFiles(const std::string& tag) {
    config::set_override("build_files_prefix", "test_tune_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(files::build_dir());
  }
  ~FreshBuildFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(files::build_dir(), ignored);
    config::set_override("build_files_prefix", "");
  }
};

TEST_F(Tune, APrebuiltBatchCompilesWithoutRunningTheCompiler) {
  FreshBuildFiles fresh("prebuild");
  config::set_override("cc_vector_bytes", "0");  // scalar tiles: no kernel library to build as well
  Matmul m = matmul(40);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  const ir::Target a = ctx.backend().target();
  ir::Target b = a;
  b.min_tile_work = std::int64_t{1} << 40;  // no tile: a plain loop nest, other code
  const std::vector<runtime::CompileOptions> options{{.target = a}, {.target = b}};
  const int before = backends::cc::compiler_invocations();
  ctx.prebuild(m.comp, "mm", options);
  const int built = backends::cc::compiler_invocations();
  EXPECT_GE(built, before + 2) << "both routines were built ahead";
  const runtime::Routine ra = ctx.compile(m.comp, "mm", options[0]);
  const runtime::Routine rb = ctx.compile(m.comp, "mm", options[1]);
  EXPECT_EQ(backends::cc::compiler_invocations(), built) << "the compiles found everything in the cache";
  EXPECT_NE(ra.source(), rb.source());
  // What was prebuilt is what runs: both compute the product.
  const auto ya = run_and_read(ctx, ra, m.y), yb = run_and_read(ctx, rb, m.y);
  EXPECT_EQ(ya.size(), yb.size());
}

TEST_F(Tune, APrebuildOfAnIllegalScheduleThrowsNothingAndItsCompileStillDoes) {
  Matmul m = matmul(32);
  Matmul other = matmul(8);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  // A trace recorded on another program names loops this one does not have.
  const ir::LoweredRoutine theirs = ctx.optimized_routine(other.comp, "other");
  schedule::ScheduleTrace foreign = schedule::record(theirs, {});
  foreign.digest = "0000";  // not this program's
  const std::vector<runtime::CompileOptions> options{{.schedule = runtime::ScheduleChoice::replay(foreign)}};
  EXPECT_NO_THROW(ctx.prebuild(m.comp, "mm", options));
  EXPECT_THROW(ctx.compile(m.comp, "mm", options[0]), ScheduleError);
}

TEST_F(Tune, CandidatesOfABatchAreBuiltBeforeAnyIsTimed) {
  FreshBuildFiles fresh("batch");
  config::set_override("cc_vector_bytes", "0");
  Matmul m = matmul(40);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.compile_batch = 64;  // the seeds: one batch
  // Besides the default and the serial baseline (the same code here), the outermost loop split
  // by 4 and by 8: other code.
  o.hooks.extra_seeds = [](const ir::LoweredRoutine& optimized, const ir::Target& target) {
    std::vector<tune::Candidate> out;
    for (std::int64_t factor : {4, 8})
      out.push_back({"split " + std::to_string(factor), target,
                     schedule::record(optimized, {schedule::split(outermost_loop(optimized.body), factor)})});
    return out;
  };
  std::vector<int> invocations_when_timed;
  o.hooks.measure = [&](const tune::Candidate&, const std::function<void()>& run) {
    invocations_when_timed.push_back(backends::cc::compiler_invocations());
    run();
    return 1.0;
  };
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  std::string judged;
  for (const auto& c : report.candidates) judged += c.label + ": " + c.why + "\n";
  ASSERT_GE(invocations_when_timed.size(), 2u) << judged;
  EXPECT_EQ(invocations_when_timed.front(), invocations_when_timed.back())
      << "no compiler ran between the first and the last timing of the batch";
}

}  // namespace
}  // namespace cannl
