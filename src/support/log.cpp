// Logging to stderr and phase timers. Lines are written with one call under a mutex so output from
// several threads never interleaves mid-line.
#include "cannl/support/log.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>

#include "cannl/support/config.h"

namespace cannl::logging {
namespace {

void emit(std::string_view prefix, std::string_view message) {
  static std::mutex mutex;
  std::string line;
  line.reserve(prefix.size() + message.size() + 1);
  line.append(prefix).append(message).push_back('\n');
  std::lock_guard lock(mutex);
  std::cerr << line << std::flush;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int debug_level() { return static_cast<int>(config::get_int_in("debug", 0, 100)); }

void info(std::string_view message) { emit("[cannl] ", message); }

void warn(std::string_view message) { emit("[cannl] warning: ", message); }

ScopedTimer::ScopedTimer(std::string phase) : phase_(std::move(phase)), start_ns_(now_ns()) {}

ScopedTimer::~ScopedTimer() {
  // A destructor must not throw: a bad CANNL_DEBUG value is reported by the next debug_level()
  // call outside a destructor instead.
  try {
    if (debug_level() < 1) return;
    double ms = static_cast<double>(now_ns() - start_ns_) / 1e6;
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, ": %.3f ms", ms);
    info(phase_ + buffer);
  } catch (...) {
  }
}

}  // namespace cannl::logging
