#pragma once
// Logging and debug levels (config key `debug`, see docs/config.md):
//   0 quiet; 1 per-pass timings; 2 + IR dumps (.cd, .ll) under build_files/<exe>/;
//   3 + generated source kept and compiler commands printed.
//
//   if (log::debug_level() >= 1) log::info("lowered {} in {} ms", ...);

#include <string>
#include <string_view>

namespace cannl::log {

int debug_level();
/// Informational line to stderr, prefixed "[cannl] ".
void info(std::string_view message);
/// Warning line to stderr, prefixed "[cannl] warning: ".
void warn(std::string_view message);

/// Times a named phase; at debug level >= 1 prints "<phase>: <ms> ms" when destroyed.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::string phase);
  ~ScopedTimer();
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::string phase_;
  long long start_ns_;
};

}  // namespace cannl::log
