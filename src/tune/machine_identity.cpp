// This machine as the schedule cache's key sees it (see machine_identity.h, schedule_cache.h).
#include "tune/machine_identity.h"

#include "cannl/backends/openmp_team.h"
#include "cannl/support/files.h"
#include "cannl/support/error.h"
#include "cannl/tune/schedule_cache.h"

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace cannl::tune {

namespace {

/// The value of the first "<field>\t: <value>" line of /proc/cpuinfo's text; "" when absent.
std::string cpuinfo_field(std::string_view text, std::string_view field) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    if (key != field) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    return std::string(value);
  }
  return "";
}

std::string this_cpu_model() {
#if defined(__linux__)
  try {
    if (std::string model = cpu_model_from_cpuinfo(files::read_file("/proc/cpuinfo")); !model.empty()) return model;
  } catch (const IoError&) {
    // Without /proc the model is unknown (below).
  }
#elif defined(__APPLE__)
  char brand[256] = {};
  std::size_t size = sizeof brand;
  if (sysctlbyname("machdep.cpu.brand_string", brand, &size, nullptr, 0) == 0 && brand[0] != '\0') return brand;
#endif
  return "unknown CPU";
}

}  // namespace

std::string cpu_model_from_cpuinfo(std::string_view cpuinfo) {
  if (std::string model = cpuinfo_field(cpuinfo, "model name"); !model.empty()) return model;
  const std::string implementer = cpuinfo_field(cpuinfo, "CPU implementer");
  const std::string part = cpuinfo_field(cpuinfo, "CPU part");
  if (implementer.empty() && part.empty()) return "";
  return "CPU implementer " + implementer + " part " + part;
}

MachineIdentity this_machine(const ir::Target& target) {
  // The model is read once: it does not change while the process runs.
  static const std::string model = this_cpu_model();
  // The team as the code that runs the routine gets it, resolved in the same place: not the
  // environment as it is now, which the OpenMP runtime read once, when it loaded.
  return {model, backends::cc::routine_team(target)};
}

}  // namespace cannl::tune
