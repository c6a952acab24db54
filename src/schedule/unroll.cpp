// Unroll (semantics-backend.md 8.2): the Unrolled annotation (the renderer repeats the body in
// order), or materialized copies of the body with the index fixed, so simplify and CSE see
// them. Iterations keep their order, so both forms are always legal.
#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

constexpr std::int64_t kMaxMaterializedCopies = 64;

// The value of a guard `lt(index(c), N)` with a fixed index, as Split and Pad build them.
std::optional<bool> constant_guard(const ir::ScalarRef& condition) {
  const auto* a = std::get_if<ir::Apply>(&condition->node);
  if (!a || a->op != ir::Op::Cmplt || a->args.size() != 2) return std::nullopt;
  const auto* i = std::get_if<ir::EmbedIndex>(&a->args[0]->node);
  const auto* n = std::get_if<ir::Constant>(&a->args[1]->node);
  if (!i || !n || !i->index.is_fixed()) return std::nullopt;
  return static_cast<double>(i->index.offset) < n->value;
}

// Folds the copies' constant guards: a pad or remainder copy would otherwise keep (guarded)
// fixed indices outside the node, which the verifier rejects.
class GuardFolder : public ir::TreeMapper {
 public:
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    if (const auto* i = std::get_if<ir::If>(&s->node)) {
      if (const auto value = constant_guard(i->condition)) return *value ? map_stmt(i->body) : ir::seq({});
    }
    return map_children(s);
  }
};

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Unroll& t) {
  const std::string action = std::string(t.materialize ? "materialized " : "") + "unroll " + name_of(r, t.axis);
  const LoopSite site = require_loop(r, t.axis, action);
  const std::int64_t extent = site.loop->end - site.loop->begin;
  if (!t.materialize)
    return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For& f) {
      return ir::for_loop(f.index, f.begin, f.end, f.body, ir::AxisType::Unrolled);
    }));
  if (extent > kMaxMaterializedCopies)
    throw_schedule_error(r, t.axis, action,
                         "materializing would copy the body " + std::to_string(extent) + " times (at most " +
                             std::to_string(kMaxMaterializedCopies) + ")",
                         "Split by a factor <= " + std::to_string(kMaxMaterializedCopies) +
                             " and unroll the inner loop, or the Unrolled annotation");
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For& f) {
    std::vector<ir::StmtRef> copies;
    for (std::int64_t v = f.begin; v < f.end; ++v) {
      ir::Replay replay;  // fresh loop symbols and local ids per copy
      replay.bind(f.index, ir::AxisIndex::fixed(v));
      copies.push_back(GuardFolder().map_stmt(replay.stmt(f.body)));
    }
    return ir::seq(std::move(copies));
  }));
}

// In traces: unroll <loop> materialize|annotate
std::string_view trace_name(Kind<Unroll>) { return "unroll"; }

void print_args(StepWriter& out, const Unroll& t) {
  out.loop(t.axis).word(t.materialize ? "materialize" : "annotate");
}

Unroll parse_args(const StepReader& in, Kind<Unroll>) {
  if (in.word(2) != "materialize" && in.word(2) != "annotate") in.bad("expected materialize or annotate");
  return Unroll{in.loop(1), in.word(2) == "materialize"};
}

}  // namespace cannl::schedule::detail
