#include "cannl/nn/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "cannl/support/error.h"
#include "nn/update_util.h"

namespace cannl::nn {

using detail::ap;
using detail::lit;
using ir::Op;

void validate_schedule(const LrSchedule& s) {
  if (!std::isfinite(s.lr) || s.lr < 0 || !std::isfinite(s.min_lr) || s.min_lr < 0)
    throw RuntimeUsageError("lr schedule: lr and min_lr must be finite and >= 0 (lr=" +
                            std::to_string(s.lr) + ", min_lr=" + std::to_string(s.min_lr) + ")");
  const bool warmup = s.kind == ScheduleKind::LinearWarmup || s.kind == ScheduleKind::WarmupCosine;
  const bool cosine = s.kind == ScheduleKind::Cosine || s.kind == ScheduleKind::WarmupCosine;
  if (warmup && s.warmup_steps <= 0)
    throw RuntimeUsageError("lr schedule: warmup needs warmup_steps > 0, got " +
                            std::to_string(s.warmup_steps));
  if (cosine && s.total_steps <= (s.kind == ScheduleKind::WarmupCosine ? s.warmup_steps : 0))
    throw RuntimeUsageError("lr schedule: cosine needs total_steps > warmup_steps, got total_steps " +
                            std::to_string(s.total_steps));
}

namespace {

/// min_lr + (lr - min_lr) (1 + cos(pi * min(progress, 1))) / 2 for progress = step' / span.
ir::RhsExprRef cosine_expr(const LrSchedule& s, const ir::RhsExprRef& steps_done, double span) {
  auto progress = ap(Op::Min, {ap(Op::Div, {steps_done, lit(span)}), lit(1)});
  auto wave = ap(Op::Add, {lit(1), ap(Op::Cos, {ap(Op::Mul, {lit(std::numbers::pi), progress})})});
  return ap(Op::Add, {lit(s.min_lr), ap(Op::Mul, {lit(0.5 * (s.lr - s.min_lr)), wave})});
}

}  // namespace

ir::RhsExprRef schedule_expr(const LrSchedule& s, const ir::RhsExprRef& step) {
  validate_schedule(s);
  const double warmup = static_cast<double>(s.warmup_steps);
  auto warm = ap(Op::Mul, {lit(s.lr), ap(Op::Min, {lit(1), ap(Op::Div, {step, lit(warmup)})})});
  switch (s.kind) {
    case ScheduleKind::Constant: return lit(s.lr);
    case ScheduleKind::LinearWarmup: return warm;
    case ScheduleKind::Cosine:
      return cosine_expr(s, step, static_cast<double>(s.total_steps));
    case ScheduleKind::WarmupCosine: {
      auto after = cosine_expr(s, ap(Op::Sub, {step, lit(warmup)}),
                               static_cast<double>(s.total_steps - s.warmup_steps));
      return ap(Op::Where, {ap(Op::Cmplt, {step, lit(warmup)}), warm, after});
    }
  }
  return lit(s.lr);
}

double schedule_value(const LrSchedule& s, double step) {
  validate_schedule(s);
  const double warmup = static_cast<double>(s.warmup_steps);
  auto cosine = [&](double done, double span) {
    const double progress = std::min(done / span, 1.0);
    return s.min_lr + 0.5 * (s.lr - s.min_lr) * (1 + std::cos(std::numbers::pi * progress));
  };
  switch (s.kind) {
    case ScheduleKind::Constant: return s.lr;
    case ScheduleKind::LinearWarmup: return s.lr * std::min(1.0, step / warmup);
    case ScheduleKind::Cosine: return cosine(step, static_cast<double>(s.total_steps));
    case ScheduleKind::WarmupCosine:
      return step < warmup ? s.lr * step / warmup
                           : cosine(step - warmup, static_cast<double>(s.total_steps - s.warmup_steps));
  }
  return s.lr;
}

}  // namespace cannl::nn
