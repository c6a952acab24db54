// Pad (semantics-backend.md 8.2): extend a loop to a multiple of a size; every leaf statement of
// its body is guarded by `If (axis < old end)`, so pad iterations do nothing (always legal).
// Guarding leaves rather than the whole body keeps inner nests perfect for Swap and Tensorize.
#include "cannl/ir/tree_mapper.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

class LeafGuard : public ir::TreeMapper {
 public:
  explicit LeafGuard(ir::ScalarRef condition) : condition_(std::move(condition)) {}
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const bool leaf = std::holds_alternative<ir::Set>(s->node) || std::holds_alternative<ir::SetLocal>(s->node) ||
                      std::holds_alternative<ir::SetDynamic>(s->node) || std::holds_alternative<ir::ZeroOut>(s->node) ||
                      std::holds_alternative<ir::TileMma>(s->node);
    if (leaf) return ir::if_then(condition_, s);
    if (std::holds_alternative<ir::If>(s->node)) return ir::if_then(condition_, s);
    return map_children(s);
  }
  // Scalars (and the loops of inlined computations in them) are evaluated only by guarded leaves.
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override { return s; }

 private:
  ir::ScalarRef condition_;
};

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Pad& t) {
  const std::string action = "pad " + name_of(r, t.axis) + " to a multiple of " + std::to_string(t.to_multiple_of);
  const LoopSite site = require_loop(r, t.axis, action);
  if (t.to_multiple_of < 1)
    throw_schedule_error(r, t.axis, action, "the multiple must be >= 1", "any multiple >= 1");
  const std::int64_t extent = site.loop->end - site.loop->begin;
  const std::int64_t padded = (extent + t.to_multiple_of - 1) / t.to_multiple_of * t.to_multiple_of;
  if (padded == extent) return r;
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For& f) {
    LeafGuard guard(index_below(ir::AxisIndex::iterator(f.index), f.end));
    return ir::for_loop(f.index, f.begin, f.begin + padded, guard.map_stmt(f.body), f.axis);
  }));
}

// In traces: pad <loop> <multiple>
std::string_view trace_name(Kind<Pad>) { return "pad"; }

void print_args(StepWriter& out, const Pad& t) { out.loop(t.axis).integer(t.to_multiple_of); }

Pad parse_args(const StepReader& in, Kind<Pad>) { return Pad{in.loop(1), in.integer(2)}; }

}  // namespace cannl::schedule::detail
