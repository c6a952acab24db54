#pragma once
// The parts of this machine that decide which schedule wins, for the schedule cache's key
// (tune::this_machine, schedule_cache.h): pure pieces, so tests give them any machine.
//
//   cpu_model_from_cpuinfo("model name\t: AMD EPYC 7B13\n...") == "AMD EPYC 7B13"
// (The team: backends::cc::routine_team, shared with the code that runs the routine.)

#include <string>
#include <string_view>

#include "cannl/ir/target.h"

namespace cannl::tune {

/// The CPU model named by the text of /proc/cpuinfo: the first "model name" (x86 and most
/// others), else "CPU implementer <i> part <p>" (ARM kernels without a model name); "" when the
/// text names neither.
std::string cpu_model_from_cpuinfo(std::string_view cpuinfo);

}  // namespace cannl::tune
