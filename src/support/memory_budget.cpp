// The memory budget (see cannl/support/memory_budget.h).
#include "cannl/support/memory_budget.h"

#include <unistd.h>

#include <cstdio>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::memory {
namespace {

std::int64_t half_of_physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::int64_t{4} << 30;  // unknown: a modest 4 GiB
  return static_cast<std::int64_t>(pages) / 2 * page;
}

}  // namespace

std::int64_t budget_bytes() {
  // Up to 2^43 MiB, so the product with 2^20 stays well inside int64.
  const std::int64_t mb = config::get_int_in("memory_budget_mb", 0, std::int64_t{1} << 43);
  return mb == 0 ? half_of_physical_memory() : mb << 20;
}

void check_budget(std::int64_t bytes, const std::string& what) {
  const std::int64_t budget = budget_bytes();
  if (bytes >= 0 && bytes <= budget) return;
  throw RuntimeUsageError(what + " needs " + (bytes < 0 ? "more than 2^63 bytes" : format_bytes(bytes)) +
                          ", more than the memory budget of " + format_bytes(budget) +
                          " (config key memory_budget_mb, from " + config::source_of("memory_budget_mb") +
                          "; 0 = half of the physical memory)");
}

std::string format_bytes(std::int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) v /= 1024, ++unit;
  char text[48];
  if (unit == 0) std::snprintf(text, sizeof text, "%lld bytes", static_cast<long long>(bytes));
  else std::snprintf(text, sizeof text, "%.1f %s", v, units[unit]);
  return text;
}

}  // namespace cannl::memory
