#pragma once
// The tuner's log (config autotune_log): every candidate of a search, its target, trace and time
// or why it lost, appended to log_files/<exe>/autotune.log.
//
//   if (options.log) append_tune_log(report);

#include "cannl/tune/tune.h"

namespace cannl::tune {

/// Appends `report` as one block; a log that cannot be written is a warning, not an error.
void append_tune_log(const TuneReport& report);

}  // namespace cannl::tune
