// schedule::apply and transform_name over the Transform variant, and the checks shared by the
// transforms (see transforms.h, transform_impls.h).
#include <type_traits>

#include "cannl/schedule/legality.h"
#include "cannl/support/error.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

namespace detail {

LoopSite require_loop(const ir::LoweredRoutine& r, ir::Symbol s, const std::string& action) {
  const auto site = find_loop(r.body, s);
  if (!site) {
    const auto loops = canonical_loops(r.body);  // named only for the message: a walk of the whole routine
    const std::string known = loops.empty() ? "the routine has no loops"
                                            : "loops i0 .. i" + std::to_string(loops.size() - 1);
    throw ScheduleError(action + ": no loop with symbol s" + std::to_string(s.id) + " in routine '" +
                        r.name + "' (a transform addresses loops of the routine it is applied to); " + known);
  }
  if (site->in_tile)
    throw_schedule_error(r, s, action, "the loop is inside a tile_mma (the tile describes it)",
                         "transform the loops around the tile_mma, or before Tensorize");
  return *site;
}

void require_unbound(const ir::LoweredRoutine& r, const std::vector<ir::Symbol>& minted, const std::string& action) {
  for (const ir::Symbol s : minted) {
    if (find_loop(r.body, s))
      throw_schedule_error(r, s, action,
                           "a loop it would make takes the symbol of loop " + name_of(r, s) +
                               ", already in the routine (the transform was applied before, or its symbols were reused)",
                           "a transform with freshly minted symbols (schedule::split, bucket_scatter, partition, ...)");
    for (const ir::StaticSymbol& x : r.statics)
      if (x.symbol == s)
        throw ScheduleError(action + ": a loop it would make takes the symbol of the static '" + x.name + "' of routine '" +
                            r.name + "'; legal alternatives: a transform with freshly minted symbols");
  }
}

void check_axis_type(const ir::LoweredRoutine& r, ir::Symbol s, ir::AxisType type, const std::string& action) {
  if (type == ir::AxisType::Serial || type == ir::AxisType::Unrolled) return;
  const auto site = require_loop(r, s, action);
  if (site.in_local_scope)
    throw_schedule_error(r, s, action, "an annotated loop inside an inlined computation (local scope)",
                         "Serial or Unrolled");
  const bool hardware = type != ir::AxisType::Vectorized;
  if (hardware && site.loop->begin != 0)
    throw_schedule_error(r, s, action, "a " + std::string(ir::axis_type_name(type)) + " loop must start at 0",
                         "Split or Pad it first");
  const bool licensed = type == ir::AxisType::Vectorized || type == ir::AxisType::WorkgroupReduce;
  const LegalityVerdict v = parallel_legality(r, s, licensed);
  if (v.legality != Legality::Illegal) return;
  std::string alternatives = "Serial, Unrolled";
  // Candidates: the loops around the offending one and those inside it.
  std::vector<ir::Symbol> nest;
  for (const ir::For* f : site.enclosing) nest.push_back(f->index);
  for (const ir::Symbol other : canonical_loops(site.stmt)) nest.push_back(other);
  for (const ir::Symbol other : nest) {
    if (other == s) continue;
    if (parallel_legality(r, other, licensed).legality == Legality::Legal)
      alternatives += ", or " + std::string(ir::axis_type_name(type)) + " on " + name_of(r, other) + " (proven legal)";
  }
  throw_schedule_error(r, s, action, "a race: " + v.reason, alternatives);
}

ir::LoweredRoutine with_body(const ir::LoweredRoutine& r, ir::StmtRef body) {
  ir::LoweredRoutine out = r;
  out.body = std::move(body);
  return out;
}

ir::ScalarRef index_below(const ir::AxisIndex& index, std::int64_t bound) {
  return ir::apply(ir::Op::Cmplt, ir::DType::I64,
                   {ir::embed_index(index), ir::constant(static_cast<double>(bound), ir::DType::I64)});
}

}  // namespace detail

ir::LoweredRoutine apply(const ir::LoweredRoutine& routine, const Transform& transform) {
  ir::LoweredRoutine out = std::visit([&](const auto& t) { return detail::apply_transform(routine, t); }, transform);
  // Each transform checks the loops it annotates; one that reshapes the body of an annotated
  // loop (a Partition or Unroll inside a WorkgroupReduce loop splitting its accumulation in two)
  // can still leave that loop unsound, which the final lowering round would take for a compiler
  // bug. Refused here, naming the transform, unless the routine was unsound before it.
  try {
    validate_parallel(out);
  } catch (const ScheduleError& e) {
    try {
      validate_parallel(routine);
    } catch (const ScheduleError&) {
      return out;  // not this transform's doing: the final round names the loop
    }
    throw ScheduleError(transform_name(transform) + ": the result has an annotated loop that is no longer sound: " +
                        e.what());
  }
  return out;
}

ir::LoweredRoutine apply(const ir::LoweredRoutine& routine, const std::vector<Transform>& transforms) {
  ir::LoweredRoutine out = routine;
  for (const auto& t : transforms) out = schedule::apply(out, t);
  return out;
}

std::string transform_name(const Transform& transform) {
  return std::visit([](const auto& t) {
    return std::string(detail::trace_name(detail::Kind<std::decay_t<decltype(t)>>{}));
  }, transform);
}

}  // namespace cannl::schedule
