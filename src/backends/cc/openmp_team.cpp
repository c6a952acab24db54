// The team of a CPU routine, resolved once for the runtime and the schedule cache's key (see
// openmp_team.h).
#include "cannl/backends/openmp_team.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "cannl/support/process.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace cannl::backends::cc {

int resolved_openmp_team(const char* omp_num_threads, int hardware_threads) {
  if (omp_num_threads != nullptr) {
    // A list "outer,inner,...": the outermost level's team is the first number.
    const std::string_view text(omp_num_threads);
    int n = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (error == std::errc() && n > 0 && (end == text.data() + text.size() || *end == ',')) return n;
  }
  return std::max(1, hardware_threads);
}

int hardware_threads() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

/// The default team of an OpenMP runtime the program itself links (found in the global symbol
/// scope), which read its environment when the program started; 0 when there is none (the cc
/// backend's libraries bring theirs, loaded locally, later).
int team_of_a_loaded_runtime() {
  using MaxThreads = int (*)();
  void* symbol = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  return symbol != nullptr ? reinterpret_cast<MaxThreads>(symbol)() : 0;
}

}  // namespace

int openmp_default_team() {
  static const int team = [] {
    if (const int loaded = team_of_a_loaded_runtime(); loaded > 0) return loaded;
    return resolved_openmp_team(std::getenv("OMP_NUM_THREADS"), hardware_threads());
  }();
  return team;
}

void pin_openmp_team() {
  const int team = openmp_default_team();
  if (resolved_openmp_team(std::getenv("OMP_NUM_THREADS"), hardware_threads()) != team)
    process::set_environment("OMP_NUM_THREADS", std::to_string(team));
}

int routine_team(const ir::Target& target) {
  if (target.threads > 0) return target.threads;
  if (!target.parallel_runtime || target.workgroups) return 1;
  return openmp_default_team();
}

}  // namespace cannl::backends::cc
