// A caller's schedule for Context::compile: transforms or a trace, applied to the lowered,
// optimized routine and checked before the backend sees it.
#include <string>
#include <utility>

#include "cannl/runtime/compile_options.h"
#include "cannl/schedule/legality.h"
#include "cannl/support/error.h"

namespace cannl::runtime {

namespace {

struct Applier {
  const ir::LoweredRoutine& routine;
  ir::LoweredRoutine operator()(const ScheduleBuilder& build) const {
    return schedule::apply(routine, build(routine));
  }
  ir::LoweredRoutine operator()(const schedule::ScheduleTrace& trace) const {
    return schedule::replay(routine, trace);
  }
};

}  // namespace

ScheduleChoice ScheduleChoice::build(ScheduleBuilder build) {
  if (!build) throw RuntimeUsageError("ScheduleChoice::build: the schedule builder is empty");
  return ScheduleChoice(std::move(build));
}

ScheduleChoice ScheduleChoice::replay(schedule::ScheduleTrace trace) { return ScheduleChoice(std::move(trace)); }

ScheduleChoice ScheduleChoice::transforms(const ir::LoweredRoutine& made_for,
                                          const std::vector<schedule::Transform>& transforms) {
  return replay(schedule::record(made_for, transforms));
}

ir::LoweredRoutine ScheduleChoice::apply(const ir::LoweredRoutine& routine) const {
  try {
    ir::LoweredRoutine scheduled = std::visit(Applier{routine}, how_);
    // The backend's final round may only turn parallel loops serial; the annotations the caller
    // chose must already be sound, so an unsound one is the caller's error here rather than an
    // InternalError there.
    schedule::validate_parallel(scheduled);
    return scheduled;
  } catch (const ScheduleError& e) {
    throw ScheduleError("the schedule given for routine '" + routine.name + "' does not apply: " + e.what());
  }
}

}  // namespace cannl::runtime
