// The tuner: a tuned routine computes the default schedule's bits, a wrong candidate never wins,
// the schedule cache replays without measuring, the budget bounds the search, the config keys.
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
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using Dims = std::vector<std::int64_t>;

using tune_test::gaussian;
using tune_test::Matmul;
using tune_test::matmul;

class Tune : public testing::Test {
 protected:
  void SetUp() override {
    reset_tensor_state();
    config::set_override("autotune_repeats", "1");
    cache_dir_ = files::build_dir() / ("schedule_cache_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(cache_dir_);
  }
  void TearDown() override { config::clear_overrides(); }

  /// A quick search: no target sweeps, no rounds, a private cache folder.
  tune::TuneOptions quick() const {
    tune::TuneOptions o = tune::TuneOptions::from_config();
    o.sweep_target = false;
    o.rounds = 0;
    o.cache_dir = cache_dir_;
    return o;
  }

  std::filesystem::path cache_dir_;
};

std::vector<std::byte> run_and_read(runtime::Context& ctx, const runtime::Routine& r, const Tensor& y) {
  ctx.run(r);
  return ctx.get_bytes(y.value());
}

TEST_F(Tune, TunedMatmulIsBitwiseTheDefaultWithoutTheLicence) {
  config::set_override("cpu_schedule_reassociate", "false");
  Matmul m = matmul(48);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick();
  o.rounds = 1;
  o.beam_width = 1;
  o.budget_s = 20;
  // The winner must not depend on this machine's timings: make the last candidate judged fastest.
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
  // The caller's context was never written by the search: y holds the tuned routine's product.
  ctx.run(r);
  const auto got = ctx.get_values(y);
  EXPECT_NE(got[0], 0.0);
}

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

TEST_F(Tune, TheCacheKeyChangesWithTargetLicenceAndToolchain) {
  const std::string digest(64, 'a');
  ir::Target t = ir::cpu_target(32);
  const std::string key = tune::schedule_cache_key(digest, t, "gcc 13");
  EXPECT_EQ(key, tune::schedule_cache_key(digest, t, "gcc 13"));
  EXPECT_NE(key, tune::schedule_cache_key(std::string(64, 'b'), t, "gcc 13"));
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "clang 18"));
  ir::Target other = t;
  other.threads = 3;
  EXPECT_NE(key, tune::schedule_cache_key(digest, other, "gcc 13"));
  EXPECT_NE(key, tune::schedule_cache_key(digest, ir::cpu_target(64), "gcc 13"));
  config::set_override("cpu_schedule_reassociate", "false");
  EXPECT_NE(key, tune::schedule_cache_key(digest, t, "gcc 13"));
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

/// The index of the first loop of `stmt` in program order.
ir::Symbol outermost_loop(const ir::StmtRef& stmt) {
  if (const auto* f = std::get_if<ir::For>(&stmt->node)) return f->index;
  if (const auto* seq = std::get_if<ir::Seq>(&stmt->node))
    for (const auto& s : seq->stmts)
      if (ir::Symbol found = outermost_loop(s); found != ir::Symbol{}) return found;
  return ir::Symbol{};
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
