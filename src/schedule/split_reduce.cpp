// Split_reduce (semantics-backend.md 8.2): a reduction loop `for r: d[idx] = accum(d[idx], v)`
// becomes one partial per contiguous block of r (a local each, blocks materialized in order),
// then a fixed balanced-tree combine of the partials into d. No atomics and a fixed order:
// deterministic per schedule, but re-associated, so not bitwise the serial loop.
#include <algorithm>

#include "opt/ir_rewrite.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

constexpr std::int64_t kMaxBlocks = 16;

ir::ScalarRef combine(ir::Op op, ir::DType dt, const std::vector<ir::ScalarRef>& xs, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return xs[lo];
  const std::size_t mid = lo + (hi - lo) / 2;
  return ir::apply(op, dt, {combine(op, dt, xs, lo, mid), combine(op, dt, xs, mid, hi)});
}

// The accumulated value v of `d = accum(d, v)`.
ir::ScalarRef contribution(const ir::Set& x) {
  const auto& a = std::get<ir::Apply>(x.value->node);
  const auto* g = std::get_if<ir::Get>(&a.args[0]->node);
  return g && g->node == x.node && g->index == x.index ? a.args[1] : a.args[0];
}

}  // namespace

ir::LoweredRoutine apply_split_reduce(const ir::LoweredRoutine& r, const SplitReduce& t) {
  const std::string action = "split_reduce " + name_of(r, t.axis) + " into " + std::to_string(t.num_blocks) + " blocks";
  const LoopSite site = require_loop(r, t.axis, action);
  const ir::For& f = *site.loop;
  const std::int64_t extent = f.end - f.begin;
  if (t.num_blocks < 2 || t.num_blocks > std::min(kMaxBlocks, extent))
    throw_schedule_error(r, t.axis, action, "the block count must be in [2, " + std::to_string(std::min(kMaxBlocks, extent)) + "]",
                         "2 .. " + std::to_string(std::min(kMaxBlocks, extent)) + " blocks");
  const auto body = flatten_seq(f.body);
  const auto* x = body.size() == 1 ? std::get_if<ir::Set>(&body[0]->node) : nullptr;
  const auto op = x ? accumulation_op(x->node, x->index, x->value) : std::nullopt;
  const bool free_of_loop = x && std::none_of(x->index.begin(), x->index.end(), [&](const ir::AxisIndex& i) { return i.mentions(f.index); });
  const auto reads_target = [&] {
    const auto read = ir::nodes_of(contribution(*x));
    return std::find(read.begin(), read.end(), x->node) != read.end();
  };
  if (!op || *op == ir::Op::Mul || std::get<ir::Apply>(x->value->node).op == ir::Op::Fma || !free_of_loop ||
      reads_target())
    throw_schedule_error(r, t.axis, action,
                         "the loop body is not one reduction d[idx] = add|max|min(d[idx], v) with idx free of the loop and v not reading d",
                         "none");
  const ir::DType dt = std::get<ir::Apply>(x->value->node).dtype;
  std::vector<ir::StmtRef> out;
  std::vector<ir::ScalarRef> partials;
  for (std::int64_t b = 0; b < t.num_blocks; ++b) {
    const int id = ir::fresh_scope_id();
    const std::int64_t lo = f.begin + extent * b / t.num_blocks, hi = f.begin + extent * (b + 1) / t.num_blocks;
    out.push_back(ir::declare_local(id, dt, false));
    out.push_back(ir::set_local(id, ir::constant(ir::op_neutral(*op), dt)));
    const ir::StmtRef update = ir::set_local(id, ir::apply(*op, dt, {ir::get_local(id, dt), contribution(*x)}));
    opt::Replay replay;  // fresh symbols for the block's loop and anything inside v
    out.push_back(replay.stmt(ir::for_loop(f.index, lo, hi, update)));
    partials.push_back(ir::get_local(id, dt));
  }
  out.push_back(ir::set(x->node, x->index,
                        ir::apply(*op, dt, {ir::get(x->node, x->index), combine(*op, dt, partials, 0, partials.size())}),
                        x->comment));
  return with_body(r, replace_loop(r.body, t.axis, [&](const ir::For&) { return ir::seq(std::move(out)); }));
}

}  // namespace cannl::schedule::detail
