// Child processes without a shell: arguments are passed verbatim (a quote, `;` or `$(...)` is
// just a character), output is captured, the working directory is the child's alone.
#include "cannl/support/process.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cannl/support/files.h"
#include "support/config_test_fixture.h"

namespace cannl {
namespace {

using ProcessTest = testing::ConfigEnvironment;

TEST_F(ProcessTest, ArgumentsAreNeverParsedByAShell) {
  const std::string hostile = "x'; touch pwned; echo '$(touch pwned2)`touch pwned3`";
  const auto captured = process::capture({"printf", "%s", hostile});
  EXPECT_TRUE(captured.result.started);
  EXPECT_EQ(captured.result.exit_status, 0);
  EXPECT_EQ(captured.output, hostile);
  for (const char* name : {"pwned", "pwned2", "pwned3"}) EXPECT_FALSE(std::filesystem::exists(name)) << name;
}

TEST_F(ProcessTest, RunsInTheGivenWorkingDirectoryWithOutputToAFile) {
  const auto dir = temp_dir_ / "it's $(here)";
  std::filesystem::create_directories(dir);
  files::write_atomically(dir / "in.txt", "hello\n");
  const auto r = process::run({"cat", "in.txt"}, temp_dir_ / "out.log", dir);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(files::read_file(temp_dir_ / "out.log"), "hello\n");
  EXPECT_EQ(std::filesystem::current_path(), temp_dir_) << "our own directory is unchanged";
}

TEST_F(ProcessTest, ExitStatusAndMissingPrograms) {
  EXPECT_EQ(process::run({"false"}, temp_dir_ / "log").exit_status, 1);
  const auto missing = process::capture({"cannl-no-such-program"});
  EXPECT_FALSE(missing.result.started);
  EXPECT_FALSE(missing.result.error.empty());
  EXPECT_EQ(process::resolve_program("cannl-no-such-program"), "");
  EXPECT_NE(process::resolve_program("sh"), "");
  EXPECT_EQ(process::shell_quoted({"cc", "a b.c", "it's"}), "cc 'a b.c' 'it'\\''s'");
}

// A program that ran and exited with 127 (a wrapper whose inner command is missing) started:
// its status and its output reach the caller. It used to be reported as "could not be
// executed", which hid the log that says what was missing.
TEST_F(ProcessTest, AProgramExitingWith127StartedAndKeepsItsStatus) {
  const auto r = process::run({"sh", "-c", "echo cannl-inner-tool: not found; exit 127"}, temp_dir_ / "log");
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_status, 127);
  EXPECT_EQ(files::read_file(temp_dir_ / "log"), "cannl-inner-tool: not found\n");
}

TEST_F(ProcessTest, AMissingWorkingDirectoryIsAFailureToStart) {
  const auto r = process::run({"true"}, temp_dir_ / "log", temp_dir_ / "no-such-dir");
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(r.error.empty());
}

// Spawning in several threads while another sets environment variables (the cc backend sets
// GOMP_SPINCOUNT when it loads its first library, as other compiles of a training step may be
// starting the C compiler): every child starts. Unserialized, setenv moves `environ` under a
// spawn and the child reads freed memory (posix_spawn fails with EFAULT, "Bad address").
TEST_F(ProcessTest, SpawnsStartWhileAnotherThreadSetsTheEnvironment) {
  std::atomic<int> failed{0}, running{3};
  std::vector<std::thread> spawners;
  for (int t = 0; t < 3; ++t) {
    spawners.emplace_back([&] {
      for (int k = 0; k < 60; ++k)
        if (!process::capture({"true"}).result.started) ++failed;
      --running;
    });
  }
  int set = 0;  // new variables while the spawners run: each may move `environ`
  for (; running.load() > 0 && set < 20000; ++set)
    process::set_environment_default("CANNL_TEST_SPAWN_RACE_" + std::to_string(set), std::string(64, 'x'));
  for (auto& t : spawners) t.join();
  EXPECT_EQ(failed.load(), 0) << "of 180 spawns, beside " << set << " new variables";
  ASSERT_GT(set, 0);
  EXPECT_STREQ(std::getenv("CANNL_TEST_SPAWN_RACE_0"), std::string(64, 'x').c_str());
  for (int k = 0; k < set; ++k) unsetenv(("CANNL_TEST_SPAWN_RACE_" + std::to_string(k)).c_str());
}

}  // namespace
}  // namespace cannl
