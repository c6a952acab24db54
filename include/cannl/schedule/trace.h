#pragma once
// Schedules as data (DESIGN.md non-negotiable 4): a trace is the list of transform applications
// in text, one per line, naming loops by their printed names (i0, i1, ... in the program each
// step applies to) and nodes by their position among the routine's nodes (n0, n1, ...), so it
// replays onto any structurally equal program. A digest of the program guards the replay.
//
//   cannl-schedule 1
//   digest 3f2a...
//   split i2 4 serial vectorized
//   retype i3 grid
//
//   ScheduleTrace t = record(routine, {split(i, 4), Retype{...}});
//   ir::LoweredRoutine again = replay(relowered, parse_trace(print_trace(t)));

#include <string>
#include <string_view>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/schedule/transforms.h"

namespace cannl::schedule {

struct ScheduleTrace {
  std::string digest;               // program_digest of the routine the first step applies to
  std::vector<std::string> steps;   // one transform per line
  friend bool operator==(const ScheduleTrace&, const ScheduleTrace&) = default;
};

/// SHA-256 of the routine's printed loop IR without its name (structure, labels, statics).
std::string program_digest(const ir::LoweredRoutine& routine);

/// The trace of applying `transforms` to `routine` in order (applies them to name the loops).
ScheduleTrace record(const ir::LoweredRoutine& routine, const std::vector<Transform>& transforms);

/// The text form (above) and back. parse_trace throws ScheduleError on malformed text.
std::string print_trace(const ScheduleTrace& trace);
ScheduleTrace parse_trace(std::string_view text);

/// Applies the trace's steps to `routine`. Throws ScheduleError when the routine's digest differs
/// from the trace's (not the program the schedule was made for) or a step names a missing loop.
ir::LoweredRoutine replay(const ir::LoweredRoutine& routine, const ScheduleTrace& trace);

}  // namespace cannl::schedule
