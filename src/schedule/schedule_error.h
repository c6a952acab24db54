#pragma once
// ScheduleError messages (STYLE.md "Errors"): what went wrong, the loop nest with the offending
// loop marked, and the legal alternatives.
//
//   throw_schedule_error(r, s, "split i2 by 0", "the factor must be >= 1", "factors 1..8");

#include <string>

#include "cannl/ir/loop_ir.h"

namespace cannl::schedule::detail {

/// The routine's loop IR around `loop` (a window of lines), that loop's line prefixed by ">> ".
std::string marked_nest(const ir::LoweredRoutine& routine, ir::Symbol loop);

/// Throws ScheduleError: "<action>: <problem>", the marked nest, "legal alternatives: ...".
[[noreturn]] void throw_schedule_error(const ir::LoweredRoutine& routine, ir::Symbol loop,
                                       const std::string& action, const std::string& problem,
                                       const std::string& alternatives);

/// The printed name of `s` in `routine` ("i3").
std::string name_of(const ir::LoweredRoutine& routine, ir::Symbol s);

}  // namespace cannl::schedule::detail
