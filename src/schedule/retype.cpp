// Retype (semantics-backend.md 8.2): set a loop's axis type after the legality oracle found no
// proven race (Unknown is not a rejection: the annotation is the user's assertion).
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Retype& t) {
  const std::string action =
      "retype " + name_of(r, t.axis) + " to " + std::string(ir::axis_type_name(t.type));
  require_loop(r, t.axis, action);
  check_axis_type(r, t.axis, t.type, action);
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For& f) {
    return ir::for_loop(f.index, f.begin, f.end, f.body, t.type);
  }));
}

// In traces: retype <loop> <axis type>
std::string_view trace_name(Kind<Retype>) { return "retype"; }

void print_args(StepWriter& out, const Retype& t) { out.loop(t.axis).axis_type(t.type); }

Retype parse_args(const StepReader& in, Kind<Retype>) { return Retype{in.loop(1), in.axis_type(2)}; }

}  // namespace cannl::schedule::detail
