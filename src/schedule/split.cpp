// Split (semantics-backend.md 8.2): i -> outer*factor + inner with a remainder guard when the
// factor does not divide the extent. Iteration order is unchanged, so Split alone is always
// legal; the requested axis types are then checked like a Retype.
#include "cannl/support/error.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

Split split(ir::Symbol axis, std::int64_t factor, ir::AxisType outer_type, ir::AxisType inner_type) {
  return Split{axis, factor, ir::fresh_symbol(), ir::fresh_symbol(), outer_type, inner_type};
}

namespace detail {

namespace {

std::string divisors(std::int64_t n) {
  std::string out;
  int shown = 0;
  for (std::int64_t f = 1; f <= n && shown < 12; ++f)
    if (n % f == 0) out += (shown++ ? ", " : "") + std::to_string(f);
  return out;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Split& t) {
  const std::string action = "split " + name_of(r, t.axis) + " by " + std::to_string(t.factor);
  const LoopSite site = require_loop(r, t.axis, action);
  const ir::For& f = *site.loop;
  const std::int64_t extent = f.end - f.begin;
  if (f.begin != 0)
    throw_schedule_error(r, t.axis, action, "the loop starts at " + std::to_string(f.begin) + ", not 0",
                         "split a loop that starts at 0");
  if (t.factor < 1 || t.factor > extent)
    throw_schedule_error(r, t.axis, action,
                         "the factor must be in [1, " + std::to_string(extent) + "] (the loop's extent)",
                         "factors " + divisors(extent) + " divide the extent; others in [1, " +
                             std::to_string(extent) + "] get a remainder guard");
  internal_check(t.outer.id >= 0 && t.inner.id >= 0 && !(t.outer == t.inner),
                 "split: outer/inner symbols not minted (use schedule::split)");
  require_unbound(r, {t.outer, t.inner}, action);
  // The remainder guard makes every access conditional, and the oracle proves no conflict
  // between guarded accesses: a part of a loop whose iterations provably race is checked here,
  // on the loop (the same cell in every iteration stays the same cell in every part).
  const std::int64_t outer_extent = (extent + t.factor - 1) / t.factor;
  if (outer_extent >= 2) check_axis_type(r, t.axis, t.outer_type, action);
  if (t.factor >= 2) check_axis_type(r, t.axis, t.inner_type, action);
  const ir::AxisIndex value{{{t.factor, t.outer}, {1, t.inner}}, 0};
  ir::StmtRef body = substitute_symbol(f.body, t.axis, value);
  if (extent % t.factor != 0) body = ir::if_then(index_below(value, extent), body);
  const ir::StmtRef nest = ir::for_loop(
      t.outer, 0, outer_extent, ir::for_loop(t.inner, 0, t.factor, body, t.inner_type), t.outer_type);
  ir::LoweredRoutine out = with_body(r, replace_loop(r.body, t.axis, [&](const ir::For&) { return nest; }));
  check_axis_type(out, t.outer, t.outer_type, action);
  check_axis_type(out, t.inner, t.inner_type, action);
  return out;
}

// In traces: split <loop> <factor> <outer type> <inner type>
std::string_view trace_name(Kind<Split>) { return "split"; }

void print_args(StepWriter& out, const Split& t) {
  out.loop(t.axis).integer(t.factor).axis_type(t.outer_type).axis_type(t.inner_type);
}

Split parse_args(const StepReader& in, Kind<Split>) {
  return split(in.loop(1), in.integer(2), in.axis_type(3), in.axis_type(4));
}

}  // namespace detail
}  // namespace cannl::schedule
