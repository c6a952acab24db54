// This machine as the schedule cache's key sees it (src/tune/machine_identity.cpp): the CPU model
// from /proc/cpuinfo's text, the team a CPU routine runs with (backends::cc::routine_team, the
// resolution the code that runs it gets), and a tune's key following that team: the config's
// thread count, or the OpenMP default as the runtime reads it, once, at the start.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cannl/backends/openmp_team.h"
#include "cannl/cannl.h"
#include "cannl/support/process.h"
#include "cannl/tune/schedule_cache.h"
#include "cannl/tune/tune.h"
#include "tune/machine_identity.h"
#include "tune/tune_fixture.h"
#include "tune/tune_test_util.h"

namespace cannl {
namespace {

using tune_test::Matmul;
using tune_test::matmul;
using tune_test::Tune;

TEST(MachineIdentity, TheCpuModelIsTheFirstModelNameOrTheArmPart) {
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n"
      "flags\t\t: fpu vme\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n";
  EXPECT_EQ(tune::cpu_model_from_cpuinfo(x86), "AMD EPYC 7B13 64-Core Processor");
  const std::string arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n";
  EXPECT_EQ(tune::cpu_model_from_cpuinfo(arm), "CPU implementer 0x41 part 0xd0c");
  EXPECT_EQ(tune::cpu_model_from_cpuinfo("processor\t: 0\n"), "");
  EXPECT_FALSE(tune::this_machine(ir::cpu_target(32)).cpu_model.empty());
}

TEST(MachineIdentity, TheOpenMpDefaultTeamIsResolvedAsTheRuntimeResolvesIt) {
  EXPECT_EQ(backends::cc::resolved_openmp_team(nullptr, 16), 16) << "one per hardware thread";
  EXPECT_EQ(backends::cc::resolved_openmp_team("6", 16), 6);
  EXPECT_EQ(backends::cc::resolved_openmp_team("6,2", 16), 6) << "the outermost level of a list";
  EXPECT_EQ(backends::cc::resolved_openmp_team("many", 16), 16) << "ignored, as the OpenMP runtime ignores it";
  EXPECT_EQ(backends::cc::resolved_openmp_team("0", 16), 16);
  EXPECT_GE(backends::cc::hardware_threads(), 1);
}

TEST(MachineIdentity, TheTeamIsTheTargetsWhenItNamesOne) {
  ir::Target openmp = ir::cpu_target(32);
  openmp.parallel_runtime = true;
  openmp.threads = 0;
  EXPECT_EQ(tune::this_machine(openmp).threads, backends::cc::openmp_default_team());
  ir::Target fixed = openmp;
  fixed.threads = 3;
  EXPECT_EQ(tune::this_machine(fixed).threads, 3) << "cc_threads wins over the environment";
  ir::Target serial = openmp;
  serial.parallel_runtime = false;
  EXPECT_EQ(tune::this_machine(serial).threads, 1) << "no parallel runtime: one thread";
}

/// Sets an environment variable for a scope, restoring its old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The key of a budget-0 tune of matmul(8) in a fresh cpu context (its backend reads cc_threads).
std::string key_of_a_tune(const tune::TuneOptions& quick) {
  Matmul m = matmul(8);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {m.y});
  tune::TuneOptions o = quick;
  o.budget_s = 0;  // the key is what matters: measure only the default
  o.use_cache = false;
  tune::TuneReport report;
  (void)tune::tune(ctx, m.comp, "mm", o, &report);
  return report.cache_key;
}

TEST_F(Tune, ATunesKeyFollowsTheConfiguredTeam) {
  config::set_override("cc_threads", "3");
  const std::string three = key_of_a_tune(quick());
  {
    ScopedEnv env("OMP_NUM_THREADS", "5");
    EXPECT_EQ(key_of_a_tune(quick()), three) << "a team the target names: the environment plays no part";
  }
  config::set_override("cc_threads", "5");
  EXPECT_NE(key_of_a_tune(quick()), three) << "another configured team, another key";
}

TEST_F(Tune, ATunesKeyFollowsTheTeamTheOpenMpRuntimeStarts) {
  config::set_override("cc_threads", "0");
  const ir::Target target = runtime::Context::cpu().backend().target();
  if (!target.parallel_runtime) GTEST_SKIP() << "no OpenMP here: every routine runs one thread";
  const int team = backends::cc::openmp_default_team();
  const std::string key = key_of_a_tune(quick());
  // The runtime reads the environment once, when it loads; cannl resolved the team before and
  // makes the runtime start that one: a later change moves neither the team nor the key.
  ScopedEnv env("OMP_NUM_THREADS", std::to_string(team + 1).c_str());
  EXPECT_EQ(key_of_a_tune(quick()), key);
  EXPECT_EQ(tune::this_machine(target).threads, team);
  // A routine with parallel loops loads the OpenMP runtime (libgomp, with gcc) now, if nothing
  // did before in this process: it starts the team the key names, not the environment's.
  Matmul big = matmul(256);
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {big.y});
  ctx.run(ctx.compile(big.comp, "big"));
  void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (gomp == nullptr) GTEST_SKIP() << "the routines' OpenMP runtime is not libgomp: its team is not asked";
  using MaxThreads = int (*)();
  auto max_threads = reinterpret_cast<MaxThreads>(dlsym(gomp, "omp_get_max_threads"));
  ASSERT_NE(max_threads, nullptr);
  EXPECT_EQ(max_threads(), team);
  dlclose(gomp);
}

// Run by the next test in a process of its own: the team of this process, resolved as it starts,
// then after OMP_NUM_THREADS changed.
TEST(MachineIdentity, DISABLED_PrintsTheTeamOfAFreshProcess) {
  ir::Target openmp = ir::cpu_target(32);
  openmp.parallel_runtime = true;
  openmp.threads = 0;
  const int before = tune::this_machine(openmp).threads;
  ::setenv("OMP_NUM_THREADS", "11", 1);
  std::printf("team %d then %d\n", before, tune::this_machine(openmp).threads);
}

TEST(MachineIdentity, TheEnvironmentAtTheStartDecidesTheDefaultTeam) {
  // Where the OpenMP runtime reads OMP_NUM_THREADS, the process's start, the key's team does too.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const char* threads : {"3", "5"}) {
    const auto run = process::capture({"env", std::string("OMP_NUM_THREADS=") + threads, self,
                                       "--gtest_also_run_disabled_tests",
                                       "--gtest_filter=MachineIdentity.DISABLED_PrintsTheTeamOfAFreshProcess"});
    EXPECT_NE(run.output.find(std::string("team ") + threads + " then " + threads), std::string::npos)
        << run.output;
  }
}

}  // namespace
}  // namespace cannl
