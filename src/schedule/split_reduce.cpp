// Split_reduce (semantics-backend.md 8.2): a reduction loop `for r: d[idx] = accum(d[idx], v)`
// becomes one partial per contiguous block of r (a local each, blocks materialized in order),
// or (interleaved form) one partial per lane of a fresh partials node, r = q*lanes + lane; then a
// fixed balanced-tree combine of the partials into d (a subtracting reduction d - v: partials
// of d - v from 0, added together and to d). No atomics and a fixed order: deterministic
// per schedule and the same bits on every backend, but re-associated, so not bitwise the serial
// loop (except for max / min, which are associative).
#include <algorithm>

#include "cannl/ir/rewrite.h"
#include "cannl/support/error.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule {

SplitReduce split_reduce_lanes(ir::Symbol axis, std::int64_t lanes, ir::AxisType lane_type) {
  return SplitReduce{axis, 2, lanes, ir::fresh_symbol(), lane_type};
}

namespace detail {

namespace {

constexpr std::int64_t kMaxBlocks = 16;

// Partials of a subtracting reduction (d - v) each hold the negated sum of their values, so
// they combine, and join d, by addition.
ir::Op combining_op(ir::Op op) { return op == ir::Op::Sub ? ir::Op::Add : op; }

ir::ScalarRef combine(ir::Op op, ir::DType dt, const std::vector<ir::ScalarRef>& xs, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return xs[lo];
  op = combining_op(op);
  const std::size_t mid = lo + (hi - lo) / 2;
  return ir::apply(op, dt, {combine(op, dt, xs, lo, mid), combine(op, dt, xs, mid, hi)});
}

// The accumulated value v of `d = accum(d, v)`; of `d = fma(a, b, d)` the product's factors.
std::vector<ir::ScalarRef> contribution(const ir::Set& x) {
  const auto& a = std::get<ir::Apply>(x.value->node);
  if (a.op == ir::Op::Fma) return {a.args[0], a.args[1]};
  const auto* g = std::get_if<ir::Get>(&a.args[0]->node);
  return {g && g->node == x.node && g->index == x.index ? a.args[1] : a.args[0]};
}

// `accum(acc, v)` for a contribution of one value, `fma(a, b, acc)` for one of two factors (the
// fused product of the serial loop, each lane's partial taking its own fused updates).
ir::ScalarRef accumulate(ir::Op op, ir::DType dt, const ir::ScalarRef& acc, const std::vector<ir::ScalarRef>& v) {
  if (v.size() == 2) return ir::apply(ir::Op::Fma, dt, {v[0], v[1], acc});
  return ir::apply(op, dt, {acc, v[0]});
}

// The interleaved form's partials: a fresh node with one row of `lanes` per iteration of each
// enclosing parallel loop (a row shared by parallel iterations would race), addressed at `lane`.
struct Partials {
  ir::NodeRef node;
  std::vector<ir::AxisIndex> row;  // the index of the row, without the lane axis

  std::vector<ir::AxisIndex> at(const ir::AxisIndex& lane) const {
    std::vector<ir::AxisIndex> index = row;
    index.push_back(lane);
    return index;
  }
  ir::ScalarRef get(const ir::AxisIndex& lane) const { return ir::get(node, at(lane)); }
};

constexpr std::int64_t kMaxLanes = 1024;
constexpr std::int64_t kMaxPartialsBytes = std::int64_t{1} << 24;

Partials make_partials(const LoopSite& site, const ir::Set& x, ir::DType dt, std::int64_t lanes) {
  std::vector<std::int64_t> dims;
  Partials p;
  for (const ir::For* g : site.enclosing) {
    if (g->axis != ir::AxisType::Grid && g->axis != ir::AxisType::Workgroup && g->axis != ir::AxisType::WorkgroupReduce)
      continue;
    dims.push_back(g->end - g->begin);
    p.row.push_back(ir::AxisIndex{{{1, g->index}}, -g->begin});
  }
  dims.push_back(lanes);
  p.node = ir::make_node(x.node->debug_name() + "_partials", dt, dims);
  p.node->mode = ir::MemoryMode::Local;
  return p;
}

// for lane in [0, count): p[lane] = accum(p[lane], v(first + lane)), v copied with fresh symbols.
ir::StmtRef lane_loop(ir::Symbol lane, std::int64_t count, const ir::For& f, const ir::AxisIndex& first,
                      const Partials& p, ir::Op op, ir::DType dt, const std::vector<ir::ScalarRef>& v,
                      ir::AxisType type) {
  ir::Replay replay;
  ir::AxisIndex r = first;
  r.terms.push_back({1, lane});
  replay.bind(f.index, r);
  const ir::AxisIndex l = ir::AxisIndex::iterator(lane);
  std::vector<ir::ScalarRef> replayed;
  for (const ir::ScalarRef& x : v) replayed.push_back(replay.scalar(x));
  const ir::StmtRef update = ir::set(p.node, p.at(l), accumulate(op, dt, p.get(l), replayed), "partials");
  return ir::for_loop(lane, 0, count, update, type);
}

struct Interleaved {
  std::vector<ir::StmtRef> stmts;
  std::vector<ir::Symbol> lane_loops;  // neutral fill, main lanes, tail
};

// The checks the blocked form does not need: a lane count within the loop, partials of a
// reasonable size, and no node written from inside an inlined computation.
void check_interleaved(const ir::LoweredRoutine& r, const SplitReduce& t, const LoopSite& site, const Partials& p,
                       const std::string& action) {
  internal_check(t.lane.id >= 0, "split_reduce: lane symbol not minted (use schedule::split_reduce_lanes)");
  require_unbound(r, {t.lane}, action);
  const std::string most = std::to_string(std::min<std::int64_t>(kMaxLanes, site.loop->end - site.loop->begin));
  if (t.lanes < 2 || t.lanes > std::min<std::int64_t>(kMaxLanes, site.loop->end - site.loop->begin))
    throw_schedule_error(r, t.axis, action, "the lane count must be in [2, " + most + "]", "2 .. " + most + " lanes");
  if (site.in_local_scope)
    throw_schedule_error(r, t.axis, action, "the loop is inside an inlined computation (local scope)", "the blocked form");
  if (static_cast<std::int64_t>(p.node->size_in_bytes()) > kMaxPartialsBytes)
    throw_schedule_error(r, t.axis, action, "the partials (a row per iteration of the enclosing parallel loops) would take " +
                         std::to_string(p.node->size_in_bytes()) + " bytes", "fewer lanes, or before retyping the loops around it Grid");
}

Interleaved interleaved(const ir::LoweredRoutine& r, const SplitReduce& t, const LoopSite& site,
                        const ir::Set& x, ir::Op op, const std::string& action) {
  const ir::For& f = *site.loop;
  const std::int64_t extent = f.end - f.begin;
  const ir::DType dt = std::get<ir::Apply>(x.value->node).dtype;
  const Partials p = make_partials(site, x, dt, std::max<std::int64_t>(t.lanes, 1));
  check_interleaved(r, t, site, p, action);
  const ir::Symbol chunk = ir::fresh_symbol(), init = ir::fresh_symbol(), tail = ir::fresh_symbol();
  const std::int64_t chunks = extent / t.lanes, rest = extent % t.lanes;
  const std::vector<ir::ScalarRef> v = contribution(x);
  Interleaved result;
  result.lane_loops = {init, t.lane};
  std::vector<ir::StmtRef>& out = result.stmts;
  out.push_back(ir::for_loop(init, 0, t.lanes,
                             ir::set(p.node, p.at(ir::AxisIndex::iterator(init)), ir::constant(ir::op_neutral(op), dt), "partials"),
                             t.lane_type));
  const ir::AxisIndex chunk_start{{{t.lanes, chunk}}, f.begin};
  out.push_back(ir::for_loop(chunk, 0, chunks, lane_loop(t.lane, t.lanes, f, chunk_start, p, op, dt, v, t.lane_type)));
  if (rest > 0) {
    out.push_back(lane_loop(tail, rest, f, ir::AxisIndex::fixed(f.begin + chunks * t.lanes), p, op, dt, v, t.lane_type));
    result.lane_loops.push_back(tail);
  }
  std::vector<ir::ScalarRef> partials;
  for (std::int64_t l = 0; l < t.lanes; ++l) partials.push_back(p.get(ir::AxisIndex::fixed(l)));
  out.push_back(ir::set(x.node, x.index, ir::apply(combining_op(op), dt, {ir::get(x.node, x.index), combine(op, dt, partials, 0, partials.size())}),
                        x.comment));
  return result;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const SplitReduce& t) {
  const std::string action = "split_reduce " + name_of(r, t.axis) + " into " +
                             (t.lanes > 0 ? std::to_string(t.lanes) + " lanes" : std::to_string(t.num_blocks) + " blocks");
  const LoopSite site = require_loop(r, t.axis, action);
  const ir::For& f = *site.loop;
  const std::int64_t extent = f.end - f.begin;
  if (t.lanes <= 0 && (t.num_blocks < 2 || t.num_blocks > std::min(kMaxBlocks, extent)))
    throw_schedule_error(r, t.axis, action, "the block count must be in [2, " + std::to_string(std::min(kMaxBlocks, extent)) + "]",
                         "2 .. " + std::to_string(std::min(kMaxBlocks, extent)) + " blocks");
  const auto body = flatten_seq(f.body);
  const auto* x = body.size() == 1 ? std::get_if<ir::Set>(&body[0]->node) : nullptr;
  const auto op = x ? accumulation_op(x->node, x->index, x->value) : std::nullopt;
  const bool free_of_loop = x && std::none_of(x->index.begin(), x->index.end(), [&](const ir::AxisIndex& i) { return i.mentions(f.index); });
  const auto reads_target = [&] {
    for (const ir::ScalarRef& v : contribution(*x)) {
      const auto read = ir::nodes_of(v);
      if (std::find(read.begin(), read.end(), x->node) != read.end()) return true;
    }
    return false;
  };
  if (!op || *op == ir::Op::Mul || !free_of_loop || reads_target())
    throw_schedule_error(r, t.axis, action,
                         "the loop body is not one reduction d[idx] = add|sub|max|min(d[idx], v) or fma(a, b, d[idx]) with idx free "
                         "of the loop and v (a, b) not reading d",
                         "none");
  if (t.lanes > 0) {
    const Interleaved form = interleaved(r, t, site, *x, *op, action);
    const ir::LoweredRoutine out = with_body(r, replace_loop(r.body, t.axis, [&](const ir::For&) { return ir::seq(form.stmts); }));
    for (const ir::Symbol lane : form.lane_loops) check_axis_type(out, lane, t.lane_type, action);
    return out;
  }
  const ir::DType dt = std::get<ir::Apply>(x->value->node).dtype;
  std::vector<ir::StmtRef> out;
  std::vector<ir::ScalarRef> partials;
  for (std::int64_t b = 0; b < t.num_blocks; ++b) {
    const int id = ir::fresh_scope_id();
    const std::int64_t lo = f.begin + extent * b / t.num_blocks, hi = f.begin + extent * (b + 1) / t.num_blocks;
    out.push_back(ir::declare_local(id, dt, false));
    out.push_back(ir::set_local(id, ir::constant(ir::op_neutral(*op), dt)));
    const ir::StmtRef update = ir::set_local(id, accumulate(*op, dt, ir::get_local(id, dt), contribution(*x)));
    ir::Replay replay;  // fresh symbols for the block's loop and anything inside v
    out.push_back(replay.stmt(ir::for_loop(f.index, lo, hi, update)));
    partials.push_back(ir::get_local(id, dt));
  }
  out.push_back(ir::set(x->node, x->index,
                        ir::apply(combining_op(*op), dt, {ir::get(x->node, x->index), combine(*op, dt, partials, 0, partials.size())}),
                        x->comment));
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For&) { return ir::seq(std::move(out)); }));
}

// In traces: split_reduce <loop> <blocks> | <loop> lanes <lanes> <lane type>
std::string_view trace_name(Kind<SplitReduce>) { return "split_reduce"; }

void print_args(StepWriter& out, const SplitReduce& t) {
  out.loop(t.axis);
  if (t.lanes > 0) out.word("lanes").integer(t.lanes).axis_type(t.lane_type);
  else out.integer(t.num_blocks);
}

SplitReduce parse_args(const StepReader& in, Kind<SplitReduce>) {
  if (in.word(2) == "lanes") return split_reduce_lanes(in.loop(1), in.integer(3), in.axis_type(4));
  return SplitReduce{in.loop(1), in.integer(2)};
}

}  // namespace detail
}  // namespace cannl::schedule
