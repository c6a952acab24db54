// BucketScatter (see transforms.h): a scatter nest run once per bucket of target rows, each
// copy doing only the updates whose row falls in its bucket. The rows and values read nothing
// the nest writes, so every update computes what it did before; each valid row falls in exactly
// one bucket (buckets * width >= V), so every update happens once; and all the updates of one
// cell share its row, hence its bucket, where they run in their old order: bitwise the nest.
#include <algorithm>
#include <limits>
#include <set>

#include "cannl/ir/tree_mapper.h"
#include "cannl/support/error.h"
#include "schedule/row_bucket.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

BucketScatter bucket_scatter(ir::Symbol top, std::int64_t buckets, ir::AxisType bucket_type) {
  return BucketScatter{top, buckets, ir::fresh_symbol(), bucket_type};
}

namespace detail {

namespace {

// What the nest under a loop holds, and why it may not run once per bucket ("" when it may).
class ScatterNest {
 public:
  explicit ScatterNest(const ir::LoweredRoutine& r) : r_(r) {}

  std::string problem;
  std::int64_t fewest_rows = std::numeric_limits<std::int64_t>::max();  // the smallest V

  void check(const ir::StmtRef& top) {
    stmt(top);
    if (scatters_ == 0) problem = "the nest holds no scatter (SetDynamic)";
    for (const ir::ScalarRef& s : reads_) {
      if (!problem.empty()) return;
      ir::for_each_scalar(s, [&](const ir::Scalar& x) { read(x); });
    }
  }

 private:
  const ir::LoweredRoutine& r_;
  std::set<int> written_;
  std::vector<ir::ScalarRef> reads_;
  int scatters_ = 0;

  void fail(const std::string& why) {
    if (problem.empty()) problem = why;
  }

  void stmt(const ir::StmtRef& s) {
    if (const auto* f = std::get_if<ir::For>(&s->node)) {
      if (f->axis != ir::AxisType::Serial)
        fail("loop " + name_of(r_, f->index) + " is " + std::string(ir::axis_type_name(f->axis)) +
             " (bucket the nest before annotating its loops)");
      stmt(f->body);
    } else if (const auto* q = std::get_if<ir::Seq>(&s->node)) {
      for (const auto& x : q->stmts) stmt(x);
    } else if (const auto* i = std::get_if<ir::If>(&s->node)) {
      reads_.push_back(i->condition);
      stmt(i->body);
    } else if (const auto* d = std::get_if<ir::SetDynamic>(&s->node)) {
      ++scatters_;
      written_.insert(d->node->id);
      reads_.push_back(d->dyn_value);
      reads_.push_back(d->value);
      fewest_rows = std::min(fewest_rows, d->node->dims[static_cast<std::size_t>(d->dyn_axis)]);
    } else if (!std::holds_alternative<ir::Comment>(s->node)) {
      fail("the nest holds a statement other than loops, guards and scatters (it would run once per bucket)");
    }
  }

  // A read of a node the nest writes would see the buckets' order instead of the nest's.
  void read(const ir::Scalar& x) {
    const ir::TensorNode* node = nullptr;
    if (const auto* g = std::get_if<ir::Get>(&x.node)) node = g->node.get();
    if (const auto* g = std::get_if<ir::GetDynamic>(&x.node)) node = g->node.get();
    if (node && written_.contains(node->id))
      fail(node->debug_name() + " is written by the nest's scatters and read by the nest");
    if (const auto* l = std::get_if<ir::LocalScope>(&x.node)) {
      ir::for_each_stmt(l->body, [&](const ir::Stmt& y) {
        if (std::holds_alternative<ir::Set>(y.node) || std::holds_alternative<ir::SetDynamic>(y.node) ||
            std::holds_alternative<ir::ZeroOut>(y.node) || std::holds_alternative<ir::TileMma>(y.node))
          fail("an inlined computation in the nest writes a node");
      });
    }
  }
};

// Each scatter under its bucket's guard.
class GuardScatters : public ir::TreeMapper {
 public:
  GuardScatters(ir::Symbol bucket, std::int64_t buckets) : bucket_(bucket), buckets_(buckets) {}
  ir::StmtRef map_stmt(const ir::StmtRef& s) override {
    const auto* d = std::get_if<ir::SetDynamic>(&s->node);
    if (!d) return map_children(s);
    const std::int64_t rows = d->node->dims[static_cast<std::size_t>(d->dyn_axis)];
    const std::int64_t width = (rows + buckets_ - 1) / buckets_;
    const ir::AxisIndex first{{{width, bucket_}}, 0};
    return ir::if_then(row_bucket_guard(d->dyn_value, first, width), s);
  }

 private:
  ir::Symbol bucket_;
  std::int64_t buckets_;
};

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const BucketScatter& t) {
  const std::string action = "bucket_scatter " + name_of(r, t.top) + " into " + std::to_string(t.buckets);
  const LoopSite site = require_loop(r, t.top, action);
  if (site.in_local_scope)
    throw_schedule_error(r, t.top, action, "the loop is inside an inlined computation (local scope)", "none");
  internal_check(t.bucket.id >= 0 && !(t.bucket == t.top), "bucket_scatter: bucket symbol not minted (use schedule::bucket_scatter)");
  require_unbound(r, {t.bucket}, action);
  ScatterNest nest(r);
  nest.check(site.stmt);
  if (!nest.problem.empty()) throw_schedule_error(r, t.top, action, nest.problem, "none: leave the nest as it is");
  if (t.buckets < 1 || t.buckets > nest.fewest_rows)
    throw_schedule_error(r, t.top, action,
                         "the bucket count must be in [1, " + std::to_string(nest.fewest_rows) +
                             "] (the fewest rows a scatter of the nest chooses from)",
                         "a count in that range");
  const ir::StmtRef guarded = GuardScatters(t.bucket, t.buckets).map_stmt(site.stmt);
  const ir::StmtRef nest_stmt = ir::for_loop(t.bucket, 0, t.buckets, guarded, t.bucket_type);
  ir::LoweredRoutine out = with_body(r, replace_loop(r.body, t.top, [&](const ir::For&) { return nest_stmt; }));
  check_axis_type(out, t.bucket, t.bucket_type, action);
  return out;
}

// In traces: bucket_scatter <top loop> <buckets> <bucket loop type>
std::string_view trace_name(Kind<BucketScatter>) { return "bucket_scatter"; }

void print_args(StepWriter& out, const BucketScatter& t) {
  out.loop(t.top).integer(t.buckets).axis_type(t.bucket_type);
}

BucketScatter parse_args(const StepReader& in, Kind<BucketScatter>) {
  return bucket_scatter(in.loop(1), in.integer(2), in.axis_type(3));
}

}  // namespace detail
}  // namespace cannl::schedule
