// Kernel timing on the cc backend (config key profile_kernels): the executable reads the
// generated table after every run; off, the source has no profile entry point.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "backends/routines.h"
#include "backends/run_util.h"

namespace cannl {
namespace {

using test_util::cc;

// Runs `request` `runs` times; returns the executable and the wall time of the runs.
std::pair<std::unique_ptr<backends::Executable>, std::int64_t> run_times(const backends::CompileRequest& request,
                                                                         int runs) {
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> buffers;
  for (const auto& node : request.params) {
    owned.push_back(cc()->allocate(node->size_in_bytes()));
    buffers.push_back(owned.back().get());
  }
  auto exe = cc()->compile(request);
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) exe->run(buffers, {});
  const auto wall = std::chrono::steady_clock::now() - start;
  return {std::move(exe), std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count()};
}

// Line `number` (1-based) of `text`.
std::string line_of(const std::string& text, std::int64_t number) {
  std::istringstream in(text);
  std::string line;
  for (std::int64_t k = 0; k < number && std::getline(in, line); ++k) {
  }
  return line;
}

TEST(CcProfile, OffByDefault) {
  test_util::ConfigGuard guard;
  config::set_override("debug", "0");
  auto [exe, wall] = run_times(test_routines::row_sum(64, 64), 2);
  EXPECT_TRUE(exe->kernel_timings().empty());
  EXPECT_EQ(exe->source().find("cannl_profile_"), std::string::npos);
}

TEST(CcProfile, OneRowPerTopLevelStatementWithEveryCall) {
  test_util::ConfigGuard guard;
  config::set_override("profile_kernels", "true");
  constexpr int kRuns = 3;
  auto [exe, wall] = run_times(test_routines::row_sum(64, 64), kRuns);
  const std::vector<backends::KernelTiming> timings = exe->kernel_timings();
  ASSERT_EQ(timings.size(), 2u);  // zero_out(s), then the reduction nest
  EXPECT_EQ(timings[0].label, "memset -> s");
  EXPECT_EQ(timings[1].label, "loop 64x64 -> s (s =+ m)");
  std::int64_t sum = 0;
  for (const auto& t : timings) {
    EXPECT_EQ(t.calls, kRuns) << t.label;
    EXPECT_GE(t.total_ns, 0) << t.label;
    EXPECT_EQ(t.source_file, "row_sum.c") << t.label;
    EXPECT_GT(t.source_line, 0) << t.label;
    sum += t.total_ns;
  }
  EXPECT_GT(sum, 0);
  EXPECT_LE(sum, wall);
  EXPECT_EQ(line_of(exe->source(), timings[0].source_line), "  memset(s, 0, 256);");
  EXPECT_EQ(line_of(exe->source(), timings[1].source_line).rfind("  for (", 0), 0u);
}

TEST(CcProfile, ExecutablesOfOneSourceCountTheirOwnCalls) {
  // Both load the same cached library, whose counters are shared.
  test_util::ConfigGuard guard;
  config::set_override("profile_kernels", "true");
  auto [first, wall1] = run_times(test_routines::pointwise_add(16, "shared_add"), 2);
  auto [second, wall2] = run_times(test_routines::pointwise_add(16, "shared_add"), 5);
  ASSERT_EQ(first->kernel_timings().size(), 1u);
  EXPECT_EQ(first->kernel_timings()[0].calls, 2);
  EXPECT_EQ(second->kernel_timings()[0].calls, 5);
}

// The devices of cpu_devices run executables of one loaded library on their own threads at once:
// each executable counts its own calls (the library's counters are per thread), however the calls
// interleave. With counters shared by the threads, one thread's collection took the other's calls.
TEST(CcProfile, ExecutablesOfOneSourceCountTheirOwnCallsFromTwoThreadsAtOnce) {
  test_util::ConfigGuard guard;
  config::set_override("profile_kernels", "true");
  // Two kernels (a memset, a 64 x 64 reduction): a collection on one thread can fall between the
  // other's laps.
  const auto request = test_routines::row_sum(64, 64);
  std::vector<std::unique_ptr<backends::Buffer>> owned;
  std::vector<backends::Buffer*> buffers[2];
  for (auto& list : buffers) {
    for (const auto& node : request.params) {
      owned.push_back(cc()->allocate(node->size_in_bytes()));
      list.push_back(owned.back().get());
    }
  }
  std::unique_ptr<backends::Executable> exe[2] = {cc()->compile(request), cc()->compile(request)};
  const int runs[2] = {20000, 30000};
  std::atomic<bool> go{false};
  auto run_many = [&](int k) {
    while (!go) std::this_thread::yield();
    for (int r = 0; r < runs[k]; ++r) exe[k]->run(buffers[k], {});
  };
  std::thread first(run_many, 0), second(run_many, 1);
  go = true;
  first.join();
  second.join();
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(exe[k]->kernel_timings().size(), 2u);
    for (const auto& timing : exe[k]->kernel_timings())
      EXPECT_EQ(timing.calls, runs[k]) << "executable " << k << ": " << timing.label;
  }
}

TEST(CcProfile, DebugLevelTwoTurnsItOn) {
  test_util::ConfigGuard guard;
  config::set_override("debug", "2");
  auto [exe, wall] = run_times(test_routines::pointwise_add(8, "debug_add"), 1);
  ASSERT_EQ(exe->kernel_timings().size(), 1u);
  EXPECT_NE(exe->source().find("cannl_profile_debug_add"), std::string::npos);
}

}  // namespace
}  // namespace cannl
