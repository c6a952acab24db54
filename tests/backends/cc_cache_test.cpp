// The compile cache: a routine compiled once is never compiled again, in this process or another
// one (the test binary re-runs itself as a child process to check the latter).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>

#include "backends/routines.h"
#include "backends/run_util.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/support/config.h"
#include "cannl/support/files.h"

extern char** environ;

namespace cannl {
namespace {

// A routine whose source no earlier run can have cached: `nonce` is in its comment.
backends::CompileRequest fresh_routine(const std::string& nonce) {
  auto r = test_routines::pointwise_add(4, "cached_add");
  auto& loop = std::get<ir::For>(r.routine.body->node);
  auto set = std::get<ir::Set>(loop.body->node);
  r.routine.body = ir::for_loop(loop.index, loop.begin, loop.end,
                                ir::set(set.node, set.index, set.value, "nonce " + nonce));
  return r;
}

std::string make_nonce() {
  std::random_device rd;
  return std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
         std::to_string(rd());
}

TEST(CcCache, SecondCompileInProcessRunsNoCompiler) {
  test_util::ConfigGuard guard;
  auto backend = backends::make_cc_backend();
  const auto request = fresh_routine(make_nonce());
  const int before = backends::cc::compiler_invocations();
  auto first = backend->compile(request);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
  auto second = backend->compile(request);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
  EXPECT_EQ(first->source(), second->source());
  EXPECT_TRUE(std::filesystem::exists(files::build_dir() / "cached_add.c"));
}

TEST(CcCache, DisabledCacheRecompiles) {
  test_util::ConfigGuard guard;
  auto backend = backends::make_cc_backend();
  const auto request = fresh_routine(make_nonce());
  backend->compile(request);
  config::set_override("cc_cache", "false");
  const int before = backends::cc::compiler_invocations();
  backend->compile(request);
  EXPECT_EQ(backends::cc::compiler_invocations(), before + 1);
}

// Runs this test binary as a child that executes only CacheChild.CompileOnce, with `extra_env`
// (NAME=value) in its environment; returns the child's compiler invocation count.
int run_child(const std::string& nonce, const std::string& report, const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> env_strings{"CANNLTEST_CACHE_NONCE=" + nonce,
                                       "CANNLTEST_CACHE_REPORT=" + report};
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(nullptr);
  std::string exe = "/proc/self/exe";
  std::string filter = "--gtest_filter=CacheChild.CompileOnce";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  posix_spawn_file_actions_t quiet;  // the child's gtest chatter would clutter this test's output
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &quiet, nullptr, argv, env.data());
  posix_spawn_file_actions_destroy(&quiet);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -2;
  std::ifstream in(report);
  int count = -3;
  in >> count;
  return count;
}

TEST(CcCache, SecondProcessRunsNoCompiler) {
  const std::string nonce = make_nonce();
  const std::string report = (files::build_dir() / ("cache-child-" + nonce + ".txt")).string();
  EXPECT_EQ(run_child(nonce, report), 1);  // compiles: nothing cached for this nonce
  EXPECT_EQ(run_child(nonce, report), 0);  // loads the first child's library
  std::filesystem::remove(report);
}

// Two machines sharing a cache (an NFS home's shared kernel cache, a copied build directory) pass
// the compiler the same -march=native for different CPUs. A compiler whose -march=native means
// what a file says stands in for the two machines, one child process each: the second machine
// must not load the first one's library (it would die on an illegal instruction).
TEST(CcCache, NativeArchOfAnotherMachineIsNotServed) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the stand-in CPUs are x86-64 levels";
#else
  const std::string nonce = make_nonce();
  const std::filesystem::path dir = files::build_dir() / ("native-" + nonce);
  std::filesystem::create_directories(dir);
  const std::string cpu = (dir / "cpu").string(), compiler = (dir / "cc").string();
  std::ofstream(compiler) << "#!/bin/sh\n"
                             "native=$(cat '" << cpu << "')\n"
                             "for a do\n"
                             "  shift\n"
                             "  if [ \"$a\" = -march=native ]; then set -- \"$@\" $native; else set -- \"$@\" \"$a\"; fi\n"
                             "done\n"
                             "exec cc \"$@\"\n";
  std::filesystem::permissions(compiler, std::filesystem::perms::owner_all);
  const std::string report = (dir / "report.txt").string();
  const std::vector<std::string> env{"CANNL_CC_COMPILER=" + compiler, "CANNL_CC_ARCH_FLAGS=auto",
                                     "CANNL_CC_VECTOR_BYTES=16"};
  std::ofstream(cpu) << "-march=x86-64\n";
  EXPECT_EQ(run_child(nonce, report, env), 1);  // the first machine compiles
  EXPECT_EQ(run_child(nonce, report, env), 0);  // and finds its own library again
  std::ofstream(cpu) << "-march=x86-64-v2\n";
  EXPECT_EQ(run_child(nonce, report, env), 1) << "the second machine loaded the first one's library";
  std::filesystem::remove_all(dir);
#endif
}

// Child side of SecondProcessRunsNoCompiler; skipped when run directly.
TEST(CacheChild, CompileOnce) {
  const char* nonce = std::getenv("CANNLTEST_CACHE_NONCE");
  const char* report = std::getenv("CANNLTEST_CACHE_REPORT");
  if (nonce == nullptr || report == nullptr) GTEST_SKIP() << "runs only as CcCache's child process";
  auto backend = backends::make_cc_backend();
  auto exe = backend->compile(fresh_routine(nonce));
  std::ofstream(report) << backends::cc::compiler_invocations() << "\n";
}

}  // namespace
}  // namespace cannl
