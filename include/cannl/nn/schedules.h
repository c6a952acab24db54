#pragma once
// Learning-rate schedules as expressions of the optimizer's step counter, so the rate is computed
// on the device inside the update assignment (no host round trip per step).
//
//   LrSchedule s{.kind = ScheduleKind::WarmupCosine, .lr = 3e-4, .warmup_steps = 100,
//                .total_steps = 5000, .min_lr = 3e-5};
//   schedule_value(s, 50) == 1.5e-4

#include <cstdint>

#include "cannl/ir/assignments.h"

namespace cannl::nn {

enum class ScheduleKind { Constant, LinearWarmup, Cosine, WarmupCosine };

/// t is the 1-based step number (the counter after its increment).
///   Constant:     lr
///   LinearWarmup: lr * min(1, t / warmup_steps)
///   Cosine:       min_lr + (lr - min_lr) (1 + cos(pi min(t, total) / total)) / 2
///   WarmupCosine: linear warmup for warmup_steps, then Cosine over the remaining steps
struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  double lr = 1e-3;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0;
  double min_lr = 0.0;
};

/// Throws RuntimeUsageError when a schedule needs warmup_steps / total_steps it was not given.
///   validate_schedule({.kind = ScheduleKind::Cosine, .total_steps = 0});  // throws
void validate_schedule(const LrSchedule& schedule);

/// The schedule as an expression of `step` (an RhsExpr yielding t).
///   ir::RhsExprRef lr = schedule_expr(s, ir::RhsExpr::argument(4));
ir::RhsExprRef schedule_expr(const LrSchedule& schedule, const ir::RhsExprRef& step);

/// The same schedule on the host (tests, logging).  schedule_value({.lr = 0.1}, 7) == 0.1
double schedule_value(const LrSchedule& schedule, double step);

}  // namespace cannl::nn
