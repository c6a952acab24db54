// Stage_partials: the updates of one accumulation nest go to a fresh partials node with one axis
// per kept loop, which a second nest then adds into the target in kept-loop order:
//   for ..: d[idx] = d[idx] + v          =>   zero p
//                                             for ..: p[keep] = p[keep] + v
//                                             for keep: d[idx] = d[idx] + p[keep]
// Each cell of d sums its updates per p cell first, then the p cells in order: a re-association
// (licensed like Swap's reductions, semantics-backend.md 8.3), deterministic for the schedule.
// The point is the shape of the first nest: p is injective over the kept loops, so a store that
// several iterations share (a convolution's input gradient, d[oh + kh, ..]) becomes a tile that
// folds all its cells; and a kept reduction loop gives independent partials to run in parallel.
#include <algorithm>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// Reads of `d` at `index` become reads of `p` at `p_index`; counts them and any other read of d.
class AccumulatorRedirect : public ir::TreeMapper {
 public:
  AccumulatorRedirect(const ir::Set& store, ir::NodeRef p, std::vector<ir::AxisIndex> p_index)
      : store_(store), p_(std::move(p)), p_index_(std::move(p_index)) {}
  int redirected = 0, stray = 0;
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    if (const auto* g = std::get_if<ir::Get>(&s->node); g && g->node == store_.node) {
      if (g->index != store_.index) {
        ++stray;
        return s;
      }
      ++redirected;
      return ir::get(p_, p_index_);
    }
    if (const auto* g = std::get_if<ir::GetDynamic>(&s->node); g && g->node == store_.node) ++stray;
    return map_children(s);
  }

 private:
  const ir::Set& store_;
  ir::NodeRef p_;
  std::vector<ir::AxisIndex> p_index_;
};

// A nest over the kept nest loops under symbols of its own (`minted`, or fresh ones when empty)
// around the statement `body_at` makes from the substitution of the kept loops by them.
template <typename Body>
ir::StmtRef nest_over_kept(const std::vector<const ir::For*>& kept, const std::vector<ir::Symbol>& minted, Body body_at) {
  std::map<ir::Symbol, ir::AxisIndex> renamed;
  std::vector<ir::Symbol> loops;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    loops.push_back(minted.empty() ? ir::fresh_symbol() : minted[k]);
    renamed[kept[k]->index] = ir::AxisIndex::iterator(loops.back());
  }
  const auto at = [&](const std::vector<ir::AxisIndex>& index) {
    std::vector<ir::AxisIndex> out;
    for (const auto& i : index) out.push_back(ir::substitute(i, renamed));
    return out;
  };
  ir::StmtRef nest = body_at(at);
  for (std::size_t n = kept.size(); n-- > 0;) nest = ir::for_loop(loops[n], kept[n]->begin, kept[n]->end, nest);
  return nest;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const StagePartials& t) {
  std::string action = "stage_partials at " + name_of(r, t.top) + " keep";
  for (const ir::Symbol k : t.keep) action += " " + name_of(r, k);
  const LoopSite site = require_loop(r, t.top, action);
  ir::StmtRef leaf;
  const std::vector<const ir::For*> loops = perfect_nest(*site.loop, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  if (!store || ir::scalar_dtype(*store->value) != store->node->dtype ||
      accumulation_op(store->node, store->index, store->value) != ir::Op::Add)
    throw_schedule_error(r, t.top, action, "the loop is not a perfect nest around one accumulation d = d + v (or fma(x, y, d))",
                         "the top loop of an accumulation nest");
  for (const ir::For* f : loops)
    if (f->axis != ir::AxisType::Serial)
      throw_schedule_error(r, f->index, action, "the nest's loops must be Serial", "stage the partials before annotating");
  // The kept loops in `keep` order: enclosing ones (each iteration of them its own partials)
  // and the nest's.
  std::vector<const ir::For*> axes, outer, kept;
  for (const ir::Symbol s : t.keep) {
    const auto in = [&](const std::vector<const ir::For*>& fs) {
      const auto at = std::find_if(fs.begin(), fs.end(), [&](const ir::For* f) { return f->index == s; });
      return at == fs.end() ? nullptr : *at;
    };
    // A loop kept twice would give p two axes along it and the scatter two loops over it, adding
    // each partial once per iteration of the second.
    if (std::find_if(axes.begin(), axes.end(), [&](const ir::For* f) { return f->index == s; }) != axes.end())
      throw_schedule_error(r, s, action, "loop " + name_of(r, s) + " is kept twice", "each loop kept once");
    if (const ir::For* f = in(loops)) kept.push_back(f), axes.push_back(f);
    else if (const ir::For* g = in(site.enclosing)) outer.push_back(g), axes.push_back(g);
    else
      throw_schedule_error(r, t.top, action, "every kept loop must be a loop of the nest or one enclosing it",
                           "loops of the perfect nest under the top, or loops around it");
  }
  for (const ir::For* f : loops)
    if (ir::mentions(store->index, f->index) && std::find(kept.begin(), kept.end(), f) == kept.end())
      throw_schedule_error(r, f->index, action, "the target's index mentions a loop that is not kept",
                           "keep every loop the store's index mentions");

  // p: one axis per kept loop, in `keep` order, indexed from the loop's begin.
  std::vector<std::int64_t> dims;
  std::vector<ir::AxisIndex> p_at;
  for (const ir::For* f : axes) {
    dims.push_back(f->end - f->begin);
    p_at.push_back(ir::AxisIndex{{{1, f->index}}, -f->begin});
  }
  const ir::NodeRef p = ir::make_node(store->node->debug_name() + "_partials", store->node->dtype, dims);
  AccumulatorRedirect redirect(*store, p, p_at);
  const ir::ScalarRef value = redirect.map_scalar(store->value);
  if (redirect.redirected != 1 || redirect.stray != 0)
    throw_schedule_error(r, t.top, action, "the update reads the target other than at its own cell", "none");
  ir::StmtRef first = ir::set(p, p_at, value, store->comment);
  for (std::size_t n = loops.size(); n-- > 0;) first = ir::for_loop(loops[n]->index, loops[n]->begin, loops[n]->end, first);

  for (const auto& [minted, what] : {std::pair{&t.scatter, "scatter"}, std::pair{&t.zero, "zeroing"}})
    if (!minted->empty() && minted->size() != kept.size())
      throw_schedule_error(r, t.top, action, "it names " + std::to_string(minted->size()) + " " + what + " loops for " +
                           std::to_string(kept.size()) + " kept ones", "none");
  std::vector<ir::Symbol> minted = t.scatter;
  minted.insert(minted.end(), t.zero.begin(), t.zero.end());
  require_unbound(r, minted, action);
  // The scatter: loops of its own over the kept ones, d[idx] += p[keep] in kept order.
  const ir::DType dt = store->node->dtype;
  const ir::StmtRef second = nest_over_kept(kept, t.scatter, [&](const auto& at) {
    const auto d_at = at(store->index);
    return ir::set(store->node, d_at, ir::apply(ir::Op::Add, dt, {ir::get(store->node, d_at), ir::get(p, at(p_at))}),
                   "add the partials of " + store->node->debug_name());
  });
  // With kept enclosing loops only this iteration's cells of p are zeroed: the other
  // iterations' partials may be in use.
  const ir::StmtRef zero = outer.empty() ? ir::zero_out(p) : nest_over_kept(kept, t.zero, [&](const auto& at) {
    return ir::set(p, at(p_at), ir::constant(0, ir::compute_dtype(p->dtype)), "zero this block's partials");
  });
  const ir::StmtRef replacement = ir::seq({zero, first, second});
  return with_body(r, replace_loop(r.body, t.top, [&](const ir::For&) { return replacement; }));
}

// In traces: stage_partials <top loop> <kept loop>... (a replay mints the scatter loops: later
// steps name loops by position, not by symbol)
std::string_view trace_name(Kind<StagePartials>) { return "stage_partials"; }

void print_args(StepWriter& out, const StagePartials& t) {
  out.loop(t.top);
  for (const ir::Symbol s : t.keep) out.loop(s);
}

StagePartials parse_args(const StepReader& in, Kind<StagePartials>) {
  StagePartials t{in.loop(1), {}};
  for (std::size_t k = 2; k < in.size(); ++k) t.keep.push_back(in.loop(k));
  return t;
}

}  // namespace cannl::schedule::detail

namespace cannl::schedule {

StagePartials with_scatter_loops(StagePartials t) {
  t.scatter.clear();
  t.zero.clear();
  for (std::size_t k = 0; k < t.keep.size(); ++k) {
    t.scatter.push_back(ir::fresh_symbol());
    t.zero.push_back(ir::fresh_symbol());
  }
  return t;
}

}  // namespace cannl::schedule
