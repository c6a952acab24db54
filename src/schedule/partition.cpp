// Partition (semantics-backend.md 8.2): index-set splitting of a loop into consecutive segment
// loops over copies of the body (fresh symbols and local ids). Same iterations in the same
// order: always legal.
#include "cannl/ir/rewrite.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

Partition partition(const ir::For& loop, std::vector<std::int64_t> breakpoints) {
  ir::Replay count;  // how many loop symbols a copy of the loop gives out
  (void)count.stmt(ir::for_loop(loop.index, loop.begin, loop.end, loop.body, loop.axis));
  Partition p{loop.index, std::move(breakpoints), {}};
  for (std::size_t k = 0; k <= p.breakpoints.size(); ++k) {
    std::vector<ir::Symbol> minted;
    for (std::size_t n = 0; n < count.symbols_given(); ++n) minted.push_back(ir::fresh_symbol());
    p.segment_loops.push_back(std::move(minted));
  }
  return p;
}

namespace detail {

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Partition& t) {
  std::string points;
  for (const auto p : t.breakpoints) points += (points.empty() ? "" : ",") + std::to_string(p);
  const std::string action = "partition " + name_of(r, t.axis) + " at " + points;
  const LoopSite site = require_loop(r, t.axis, action);
  const ir::For& f = *site.loop;
  if (f.axis == ir::AxisType::Grid || f.axis == ir::AxisType::Workgroup || f.axis == ir::AxisType::WorkgroupReduce)
    throw_schedule_error(r, t.axis, action, "segments of a " + std::string(ir::axis_type_name(f.axis)) +
                                                " loop would not start at 0",
                         "partition while the loop is serial, then retype the segments");
  std::int64_t previous = f.begin;
  for (const auto p : t.breakpoints) {
    if (p <= previous || p >= f.end)
      throw_schedule_error(r, t.axis, action,
                           "breakpoints must increase strictly inside (" + std::to_string(f.begin) + ", " +
                               std::to_string(f.end) + ")",
                           "increasing breakpoints in [" + std::to_string(f.begin + 1) + ", " + std::to_string(f.end - 1) + "]");
    previous = p;
  }
  if (!t.segment_loops.empty() && t.segment_loops.size() != t.breakpoints.size() + 1)
    throw_schedule_error(r, t.axis, action, "it names the loops of " + std::to_string(t.segment_loops.size()) + " segments for " +
                             std::to_string(t.breakpoints.size() + 1),
                         "mint them with schedule::partition");
  std::vector<ir::Symbol> minted;
  for (const auto& loops : t.segment_loops) minted.insert(minted.end(), loops.begin(), loops.end());
  require_unbound(r, minted, action);
  std::vector<ir::StmtRef> segments;
  std::int64_t lo = f.begin;
  for (std::size_t k = 0; k <= t.breakpoints.size(); ++k) {
    const std::int64_t hi = k < t.breakpoints.size() ? t.breakpoints[k] : f.end;
    ir::Replay replay;  // each segment gets its own symbols, so loops stay uniquely named
    if (!t.segment_loops.empty()) replay.take_symbols(t.segment_loops[k]);
    segments.push_back(replay.stmt(ir::for_loop(f.index, lo, hi, f.body, f.axis)));
    if (!t.segment_loops.empty() && replay.symbols_given() != t.segment_loops[k].size())
      throw_schedule_error(r, t.axis, action, "segment " + std::to_string(k) + " has " + std::to_string(replay.symbols_given()) +
                               " loops, and the transform names " + std::to_string(t.segment_loops[k].size()),
                           "mint the segments' loops with schedule::partition on the routine it applies to");
    lo = hi;
  }
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For&) { return ir::seq(std::move(segments)); }));
}

// In traces: partition <loop> <breakpoint>... (a replay mints the segments' loops: later steps
// name them by their printed names)
std::string_view trace_name(Kind<Partition>) { return "partition"; }

void print_args(StepWriter& out, const Partition& t) {
  out.loop(t.axis);
  for (const auto p : t.breakpoints) out.integer(p);
}

Partition parse_args(const StepReader& in, Kind<Partition>) {
  Partition p{in.loop(1), {}};
  for (std::size_t k = 2; k < in.size(); ++k) p.breakpoints.push_back(in.integer(k));
  return p;
}

}  // namespace detail
}  // namespace cannl::schedule
