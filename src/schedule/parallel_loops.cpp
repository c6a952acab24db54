// Loop questions of the default schedules (see parallel_loops.h).
#include "schedule/parallel_loops.h"

#include "cannl/ir/tree_mapper.h"
#include "cannl/schedule/legality.h"

namespace cannl::schedule::detail {

std::int64_t work_of(const ir::StmtRef& s) {
  if (const auto* f = std::get_if<ir::For>(&s->node)) return (f->end - f->begin) * work_of(f->body);
  if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
    std::int64_t sum = 0;
    for (const auto& x : q->stmts) sum += work_of(x);
    return sum;
  }
  if (const auto* i = std::get_if<ir::If>(&s->node)) return work_of(i->body);
  if (const auto* t = std::get_if<ir::TileMma>(&s->node)) return t->rows() * t->cols() * t->steps();
  return 1;
}

bool provably_parallel(const ir::LoweredRoutine& routine, const ir::For& f, std::int64_t min_extent) {
  return f.begin == 0 && f.end - f.begin >= min_extent && f.axis == ir::AxisType::Serial &&
         parallel_legality(routine, f.index).legality == Legality::Legal;
}

namespace {

bool scalar_mentions(const ir::ScalarRef& value, ir::Symbol s) {
  bool found = false;
  ir::for_each_scalar(value, [&](const ir::Scalar& x) {
    if (const auto* g = std::get_if<ir::Get>(&x.node)) found = found || ir::mentions(g->index, s);
    if (const auto* d = std::get_if<ir::GetDynamic>(&x.node)) found = found || ir::mentions(d->index, s);
    if (const auto* e = std::get_if<ir::EmbedIndex>(&x.node)) found = found || e->index.mentions(s);
    // A local may hold a value computed from s outside the scatter: assume it does.
    if (std::holds_alternative<ir::GetLocal>(x.node)) found = true;
  });
  return found;
}

}  // namespace

bool drives_dynamic_write(const ir::StmtRef& body, ir::Symbol s) {
  bool found = false;
  ir::for_each_stmt(body, [&](const ir::Stmt& x) {
    if (const auto* d = std::get_if<ir::SetDynamic>(&x.node)) found = found || scalar_mentions(d->dyn_value, s);
  });
  return found;
}

}  // namespace cannl::schedule::detail
