// Gather_windows: a scatter over sliding windows becomes a gather through a zero-bordered copy
// of the operand (the transposed convolution, transforms.h):
//   for o: for k: d[o + k] += a[o] * b[k]     =>   zero a_w;  for q: a_w[q + W - 1] = a[q]
//                                                  for o' in [0, O + W - 1): for k:
//                                                    d[o'] += a_w[o' - k + W - 1] * b[k]
// Each cell of d now gets all its updates from one iteration of the cell loops, so the store is
// injective over them and the nest is the forward convolution's shape: rows (the batch and d's
// spatial axes), columns (d's channels) and steps (the window and a's channels) of one tile.
// The border adds products 0 * b where the scatter adds nothing, and the updates of a cell come
// in the new loop order: a re-association licensed like Stage_partials'.
#include <algorithm>

#include "cannl/ir/rewrite.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// The axis of `index` mentioning `s`, or -1; -2 when several do.
int axis_mentioning(const std::vector<ir::AxisIndex>& index, ir::Symbol s) {
  int found = -1;
  for (std::size_t a = 0; a < index.size(); ++a)
    if (index[a].mentions(s)) found = found == -1 ? static_cast<int>(a) : -2;
  return found;
}

// Coefficient 1 for exactly the symbols `want` (and no other term).
bool unit_terms(const ir::AxisIndex& axis, std::initializer_list<ir::Symbol> want) {
  if (axis.terms.size() != want.size()) return false;
  return std::all_of(want.begin(), want.end(), [&](ir::Symbol s) {
    return std::any_of(axis.terms.begin(), axis.terms.end(), [&](const ir::AffineTerm& t) { return t.symbol == s && t.coeff == 1; });
  });
}

const ir::For* loop_named(const std::vector<const ir::For*>& loops, ir::Symbol s) {
  const auto at = std::find_if(loops.begin(), loops.end(), [&](const ir::For* f) { return f->index == s; });
  return at == loops.end() ? nullptr : *at;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const GatherWindows& t) {
  std::string action = "gather_windows at " + name_of(r, t.top);
  for (const auto& [o, k] : t.windows) action += " " + name_of(r, o) + " " + name_of(r, k);
  const LoopSite site = require_loop(r, t.top, action);
  ir::StmtRef leaf;
  const std::vector<const ir::For*> loops = perfect_nest(*site.loop, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  const auto update = store ? parse_matmul_update(*store) : std::nullopt;
  if (!store || !update || accumulation_op(store->node, store->index, store->value) != ir::Op::Add)
    throw_schedule_error(r, t.top, action, "the loop is not a perfect nest around one update d = d + a * b (or fma(a, b, d))",
                         "the top loop of a convolution's input gradient");
  if (t.windows.empty()) throw_schedule_error(r, t.top, action, "no window pairs", "pairs (cell loop, window loop)");
  for (const ir::For* f : loops)
    if (f->axis != ir::AxisType::Serial)
      throw_schedule_error(r, f->index, action, "the nest's loops must be Serial", "gather before annotating");

  // The operand read at the cell loops (the other one may not mention them).
  const ir::Symbol first_cell = t.windows.front().first;
  const bool a_moves = std::any_of(update->a->index.begin(), update->a->index.end(),
                                   [&](const ir::AxisIndex& i) { return i.mentions(first_cell); });
  const ir::Get& source = a_moves ? *update->a : *update->b;
  const ir::Get& other = a_moves ? *update->b : *update->a;
  if (source.node == store->node || source.node->is_padded())
    throw_schedule_error(r, first_cell, action, "the windowed operand is the target or a padded node", "none");

  std::vector<std::int64_t> dims = source.node->dims;
  std::vector<ir::AxisIndex> source_at = source.index;
  std::map<ir::Symbol, ir::AxisIndex> shift;  // o -> o - k
  std::map<ir::Symbol, std::pair<std::int64_t, std::int64_t>> range;
  std::vector<int> axes;
  for (const auto& [o, k] : t.windows) {
    const ir::For* lo = loop_named(loops, o);
    const ir::For* lk = loop_named(loops, k);
    if (!lo || !lk || o == k || shift.contains(o) || shift.contains(k) || range.contains(k))
      throw_schedule_error(r, t.top, action, "each pair must name two distinct loops of the nest, each loop in one pair",
                           "loops of the perfect nest under the top");
    const int d_axis = axis_mentioning(store->index, o);
    if (d_axis < 0 || axis_mentioning(store->index, k) != d_axis || !unit_terms(store->index[d_axis], {o, k}))
      throw_schedule_error(r, o, action, "the target's index has no axis o + k (+ offset) holding the pair alone",
                           "a cell loop and a window loop summed in one axis of the store");
    const int s_axis = axis_mentioning(source.index, o);
    if (s_axis < 0 || !unit_terms(source.index[s_axis], {o}) || axis_mentioning(source.index, k) != -1 ||
        axis_mentioning(other.index, o) != -1)
      throw_schedule_error(r, o, action, "the cell loop must be read by one operand alone, at an axis o (+ offset), without the window loop",
                           "a convolution's input gradient");
    const std::int64_t offset = source.index[s_axis].offset;
    if (lo->begin + offset != 0 || lo->end + offset != dims[s_axis])
      throw_schedule_error(r, o, action, "the cell loop does not span the operand's axis whole",
                           "an operand read over its whole axis");
    // An empty window would give a border of -1: a copy narrower than the operand, written
    // before its first cell.
    if (lk->end <= lk->begin)
      throw_schedule_error(r, k, action, "the window loop is empty (the nest adds nothing)", "a window of at least one step");
    const std::int64_t border = lk->end - lk->begin - 1;
    dims[s_axis] += 2 * border;
    // a[o + c] becomes a_w[o' - k + c + border]: at o' - k = o it reads a[o + c], and o' - k + c
    // runs over [-border, n + border) as o' and k run over their ranges.
    source_at[s_axis] = ir::AxisIndex{{{1, o}, {-1, k}}, offset + border};
    shift[o] = ir::AxisIndex{{{1, o}, {-1, k}}, 0};
    range[o] = {lo->begin + lk->begin, lo->end + lk->end - 1};
    range[k] = {lk->begin, lk->end};
    axes.push_back(s_axis);
  }

  // The zero-bordered copy: zeroed, then a's every cell written at its place inside the border.
  const ir::NodeRef windowed = ir::make_node(source.node->debug_name() + "_windowed", source.node->dtype, dims);
  std::vector<ir::Symbol> copy_loops;
  std::vector<ir::AxisIndex> from, to;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    copy_loops.push_back(ir::fresh_symbol());
    from.push_back(ir::AxisIndex::iterator(copy_loops.back()));
    to.push_back(from.back());
  }
  for (std::size_t n = 0; n < axes.size(); ++n) {
    const int a = axes[n];
    to[a].offset = (dims[a] - source.node->dims[a]) / 2;
  }
  ir::StmtRef copy = ir::set(windowed, to, ir::get(source.node, from), "the windows' zero border around " + source.node->debug_name());
  for (std::size_t a = dims.size(); a-- > 0;) copy = ir::for_loop(copy_loops[a], 0, source.node->dims[a], copy);

  // The gather: d's index and the other reads with o -> o - k, the windowed operand through the copy.
  const ir::NodeRef source_node = source.node;
  const ir::GetRewrite rewrite = [&](const ir::Get& g) -> std::optional<ir::ScalarRef> {
    if (g.node == source_node && g.index == source.index) return ir::get(windowed, source_at);
    std::vector<ir::AxisIndex> at;
    for (const auto& i : g.index) at.push_back(ir::substitute(i, shift));
    return ir::get(g.node, at);
  };
  std::vector<ir::AxisIndex> d_at;
  for (const auto& i : store->index) d_at.push_back(ir::substitute(i, shift));
  ir::StmtRef gather = ir::set(store->node, d_at, ir::map_gets(store->value, rewrite), store->comment);
  for (std::size_t n = loops.size(); n-- > 0;) {
    const ir::For& f = *loops[n];
    const auto [begin, end] = shift.contains(f.index) ? range.at(f.index) : std::pair{f.begin, f.end};
    gather = ir::for_loop(f.index, begin, end, gather);
  }
  const ir::StmtRef replacement = ir::seq({ir::zero_out(windowed), copy, gather});
  return with_body(r, replace_loop(r.body, t.top, [&](const ir::For&) { return replacement; }));
}

// In traces: gather_windows <top loop> (<cell loop> <window loop>)...
std::string_view trace_name(Kind<GatherWindows>) { return "gather_windows"; }

void print_args(StepWriter& out, const GatherWindows& t) {
  out.loop(t.top);
  for (const auto& [o, k] : t.windows) out.loop(o).loop(k);
}

GatherWindows parse_args(const StepReader& in, Kind<GatherWindows>) {
  GatherWindows t{in.loop(1), {}};
  if (in.size() % 2 != 0) in.bad("gather_windows takes a top loop and pairs of loops");
  for (std::size_t k = 2; k + 1 < in.size(); k += 2) t.windows.emplace_back(in.loop(k), in.loop(k + 1));
  return t;
}

}  // namespace cannl::schedule::detail
