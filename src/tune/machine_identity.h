#pragma once
// The parts of this machine that decide which schedule wins, for the schedule cache's key
// (tune::this_machine, schedule_cache.h): pure pieces, so tests give them any machine.
//
//   cpu_model_from_cpuinfo("model name\t: AMD EPYC 7B13\n...") == "AMD EPYC 7B13"
//   resolved_threads(target /* threads 0, OpenMP */, "6", 16) == 6

#include <string>
#include <string_view>

#include "cannl/ir/target.h"

namespace cannl::tune {

/// The CPU model named by the text of /proc/cpuinfo: the first "model name" (x86 and most
/// others), else "CPU implementer <i> part <p>" (ARM kernels without a model name); "" when the
/// text names neither.
std::string cpu_model_from_cpuinfo(std::string_view cpuinfo);

/// The team a CPU routine of `target` runs with, as the cc backend's code resolves it:
/// target.threads when set; 1 without a parallel runtime (and on a GPU target, whose host side
/// is one thread); else the OpenMP default: the first number of `omp_num_threads` (the
/// environment variable, nullptr when unset) when it is a positive integer, else
/// `hardware_threads`.
int resolved_threads(const ir::Target& target, const char* omp_num_threads, int hardware_threads);

}  // namespace cannl::tune
