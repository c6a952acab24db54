// The tuner on a GPU backend (OpenCL on PoCL in CI): its reference is the default GPU schedule,
// recorded as a trace; its seeds include the GPU tile blocking sketches the device can launch;
// every candidate computes the default's bits (the blocked tiles are bitwise their nests); the
// winner is cached and a second tune replays it without measuring.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"
#include "cannl/tune/tune.h"
#include "gpu/gpu_test_util.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

class GpuTune : public testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_test::backend()) GTEST_SKIP() << gpu_test::unavailable_reason();
    reset_tensor_state();
    config::set_override("autotune_repeats", "1");
    // A dozen candidates: NVRTC's compile of each (the CUDA twin of every OpenCL module) would
    // double the test's time and checks nothing the tile tests do not.
    config::set_override("cuda_compile_check", "off");
    cache_dir_ = files::build_dir() / "gpu_schedule_cache";
    std::filesystem::remove_all(cache_dir_);
  }
  void TearDown() override { config::clear_overrides(); }

  std::filesystem::path cache_dir_;
};

TEST_F(GpuTune, AMatmulSearchesTileBlockingsAndKeepsTheDefaultsBits) {
  const tune_test::Matmul m = tune_test::matmul(40);  // partial blocks: edges in every blocking
  const Tensor& y = m.y;
  const ir::Comp& comp = m.comp;
  runtime::Context ctx(gpu_test::backend());
  train::upload_literals(ctx, {y});

  tune::TuneOptions o = tune::TuneOptions::from_config();
  o.rounds = 0;
  o.cache_dir = cache_dir_;
  o.budget_s = 120;
  // The winner must not depend on this machine's timings: the last tile sketch judged first is
  // fastest (each candidate keeps its time in the final round, which the hook times too).
  std::map<std::string, double> ms;
  std::string fastest;
  o.hooks.measure = [&](const tune::Candidate& c, const std::function<void()>& run) {
    run();
    if (!ms.contains(c.label)) {
      ms[c.label] = starts_with(c.label, "default gpu_tile") ? 40.0 - static_cast<double>(ms.size()) : 50.0;
      if (ms[c.label] < 50.0) fastest = c.label;
    }
    return ms[c.label];
  };
  tune::TuneReport report;
  const runtime::Routine tuned = tune::tune(ctx, comp, "mm", o, &report);
  ASSERT_EQ(report.outcome, tune::TuneReport::Outcome::Searched);
  ASSERT_FALSE(report.candidates.empty());
  EXPECT_EQ(report.candidates[0].label, "default");
  EXPECT_NE(report.candidates[0].trace.find("tensorize"), std::string::npos)
      << "the reference is the default GPU schedule, a tile:\n" << report.candidates[0].trace;
  int sketches = 0;
  for (const auto& c : report.candidates) {
    EXPECT_EQ(c.verdict, tune::Verdict::Measured) << c.label << ": " << c.why << "\n" << c.trace;
    sketches += starts_with(c.label, "default gpu_tile") ? 1 : 0;
    std::printf("  %-50s %s\n", c.label.c_str(), c.target.c_str());
  }
  EXPECT_GE(sketches, 3) << "the device's launch limits left too few blockings";
  EXPECT_EQ(report.winner.label, fastest);

  // The tuned routine computes the default compile's bits.
  runtime::Context plain(gpu_test::backend());
  train::upload_literals(plain, {y});
  const runtime::Routine def = plain.compile(comp, "mm");
  ctx.run(tuned);
  plain.run(def);
  EXPECT_EQ(ctx.get_bytes(y.value()), plain.get_bytes(y.value()));

  // A second tune of the program replays the cached winner.
  o.hooks.measure = [](const tune::Candidate&, const std::function<void()>&) -> double {
    ADD_FAILURE() << "a cached program was measured";
    return 1.0;
  };
  tune::TuneReport again;
  tune::tune(ctx, comp, "mm", o, &again);
  EXPECT_EQ(again.outcome, tune::TuneReport::Outcome::CacheReplay);
  EXPECT_EQ(again.winner.target, report.winner.target);
}

}  // namespace
}  // namespace cannl
