#pragma once
// Logging and debug levels (config key `debug`, see docs/config.md):
//   0 quiet; 1 per-pass timings; 2 + IR dumps (.cd, .ll) under build_files/<exe>/ and per-kernel
//   timings (config key profile_kernels);
//   3 + generated source kept and compiler commands printed.
//
//   if (logging::debug_level() >= 1) logging::info("lowered " + name);

#include <string>
#include <string_view>

namespace cannl::logging {

/// The config key `debug` (CANNL_DEBUG); throws ConfigError when it is not an integer.
///   if (logging::debug_level() >= 2) dump_ir(...);
int debug_level();
/// Informational line to stderr, prefixed "[cannl] "; whole lines never interleave across threads.
///   logging::info("compiled step in 12 ms");  // [cannl] compiled step in 12 ms
void info(std::string_view message);
/// Warning line to stderr, prefixed "[cannl] warning: ".
///   logging::warn("cc_cache disabled");  // [cannl] warning: cc_cache disabled
void warn(std::string_view message);

/// Times a named phase; at debug level >= 1 prints "[cannl] <phase>: <ms> ms" when destroyed.
///   { logging::ScopedTimer timer("simplify"); run_simplify(); }  // [cannl] simplify: 0.412 ms
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

}  // namespace cannl::logging
