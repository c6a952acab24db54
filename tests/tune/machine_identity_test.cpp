// This machine as the schedule cache's key sees it (src/tune/machine_identity.cpp): the CPU model
// from /proc/cpuinfo's text, the team a CPU routine runs with, and a tune's key following the
// team the OpenMP runtime would start.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "cannl/cannl.h"
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

TEST(MachineIdentity, TheTeamIsResolvedAsTheGeneratedCodeResolvesIt) {
  ir::Target openmp = ir::cpu_target(32);
  openmp.parallel_runtime = true;
  openmp.threads = 0;
  EXPECT_EQ(tune::resolved_threads(openmp, nullptr, 16), 16) << "one per hardware thread";
  EXPECT_EQ(tune::resolved_threads(openmp, "6", 16), 6);
  EXPECT_EQ(tune::resolved_threads(openmp, "6,2", 16), 6) << "the outermost level of a list";
  EXPECT_EQ(tune::resolved_threads(openmp, "many", 16), 16) << "ignored, as the OpenMP runtime ignores it";
  EXPECT_EQ(tune::resolved_threads(openmp, "0", 16), 16);
  ir::Target fixed = openmp;
  fixed.threads = 3;
  EXPECT_EQ(tune::resolved_threads(fixed, "6", 16), 3) << "cc_threads wins over the environment";
  ir::Target serial = openmp;
  serial.parallel_runtime = false;
  EXPECT_EQ(tune::resolved_threads(serial, "6", 16), 1) << "no parallel runtime: one thread";
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

TEST_F(Tune, ATunesKeyFollowsTheOpenMpTeam) {
  Matmul m = matmul(8);
  auto ctx = runtime::Context::cpu();
  const ir::Target target = ctx.backend().target();
  if (!target.parallel_runtime || target.threads != 0) GTEST_SKIP() << "the team is not the OpenMP runtime's default here";
  train::upload_literals(ctx, {m.y});
  auto key_with = [&](const char* omp_num_threads) {
    ScopedEnv env("OMP_NUM_THREADS", omp_num_threads);
    tune::TuneOptions o = quick();
    o.budget_s = 0;  // the key is what matters: measure only the default
    o.use_cache = false;
    tune::TuneReport report;
    (void)tune::tune(ctx, m.comp, "mm", o, &report);
    return report.cache_key;
  };
  EXPECT_EQ(key_with("3"), key_with("3"));
  EXPECT_NE(key_with("3"), key_with("5"));
}

}  // namespace
}  // namespace cannl
