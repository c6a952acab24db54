#pragma once
// What a caller may choose when a Context compiles a routine: today, the schedule. Without one
// the backend's default schedule runs (Backend::default_schedule); with one, the caller's
// schedule is applied to the lowered, optimized routine instead, so a tuner or a recorded
// schedule reaches the code unchanged (the backend's final lowering round still runs).
//
//   auto r = ctx.optimized_routine(comp, "mm");             // what the schedule applies to
//   auto s = schedule::split(rows, 16, ir::AxisType::Grid);  // rows: a loop symbol of r
//   ctx.compile(comp, "mm", {.schedule = ScheduleChoice::transforms(r, {s})});
//
//   // A trace recorded elsewhere (another process, an earlier run) replays onto the same
//   // program built again; the program digest guards it:
//   ctx.compile(comp, "mm", {.schedule = ScheduleChoice::replay(schedule::parse_trace(text))});
//
// An illegal schedule (a missing loop, a race, a trace made for another program, parallel
// annotations failing schedule::validate_parallel) is a ScheduleError from compile before
// anything is allocated or compiled: the context is unchanged.

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cannl/ir/loop_ir.h"
#include "cannl/ir/target.h"
#include "cannl/schedule/trace.h"
#include "cannl/schedule/transforms.h"

namespace cannl::runtime {

/// Makes the transforms for the routine it is given (the one this compile lowered and
/// optimized). Each compile lowers afresh with fresh loop symbols, so transforms naming loops by
/// symbol must be made from this routine.
using ScheduleBuilder = std::function<std::vector<schedule::Transform>(const ir::LoweredRoutine&)>;

/// A schedule brought by the caller instead of the backend's default one.
class ScheduleChoice {
 public:
  /// The transforms `build` returns for the routine, applied in order. An empty list compiles
  /// the routine as optimized, without any schedule (the serial baseline).
  static ScheduleChoice build(ScheduleBuilder build);
  /// A recorded trace, replayed: the routine must be structurally equal to the one the trace was
  /// recorded on (the same program built again, here or in another process).
  static ScheduleChoice replay(schedule::ScheduleTrace trace);
  /// Transforms naming loops of `made_for` (e.g. from Context::optimized_routine), carried to
  /// this compile's routine as their trace (recorded here: ScheduleError now when they do not
  /// apply to `made_for`).
  static ScheduleChoice transforms(const ir::LoweredRoutine& made_for,
                                   const std::vector<schedule::Transform>& transforms);

  /// The scheduled routine: the choice applied to `routine`, its parallel annotations checked
  /// (schedule::validate_parallel). Throws ScheduleError naming the routine.
  ir::LoweredRoutine apply(const ir::LoweredRoutine& routine) const;

 private:
  explicit ScheduleChoice(std::variant<ScheduleBuilder, schedule::ScheduleTrace> how)
      : how_(std::move(how)) {}
  std::variant<ScheduleBuilder, schedule::ScheduleTrace> how_;
};

struct CompileOptions {
  /// Unset: the backend's default schedule.
  std::optional<ScheduleChoice> schedule;
  /// The target record this compile decides and prints for, in place of the backend's own
  /// (Backend::target()): a variant of it, e.g. another matmul blocking, team or chunk count the
  /// tuner tries. It prices the default schedule (when `schedule` is unset) and drives the final
  /// lowering round and the printer. Unset: the backend's target. A backend that reads no target
  /// (the interpreter) ignores it.
  std::optional<ir::Target> target;
  /// The optimizer stores every node it may rather than inlining it into its readers (no visit
  /// cap: virtualize_max_visits 0): the placement the tuner times against the default one
  /// (semantics-backend.md 8.6, placement search). Results are the same; the routine differs.
  bool materialize_all = false;
};

}  // namespace cannl::runtime
