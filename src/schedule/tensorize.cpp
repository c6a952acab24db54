// Tensorize (semantics-backend.md 8.2): a perfect serial nest of loops i, j, k (any order)
// around one matmul update d[.., i, j] = add(d[.., i, j], mul(a[.., i, k], b[.., k, j])) (or
// fma(a, b, d)) becomes a TileMma keeping the nest as its fallback. The fallback is the meaning,
// so the transform is always legal once the pattern matches.
#include <algorithm>
#include <cstdlib>

#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

const ir::Get* as_get(const ir::ScalarRef& s) { return s ? std::get_if<ir::Get>(&s->node) : nullptr; }

// Which of i, j, k an operand's index mentions must be exactly `want` (i, j, k flags).
bool pattern(const std::vector<ir::AxisIndex>& index, const Tensorize& t, bool wi, bool wj, bool wk) {
  return ir::mentions(index, t.i) == wi && ir::mentions(index, t.j) == wj && ir::mentions(index, t.k) == wk;
}

// Which operands mention `s`, as the fold role it gives the loop (a TileMma list), or null.
std::vector<ir::TileAxis>* fold_role(ir::TileMma& tile, ir::Symbol s) {
  const bool d = ir::mentions(tile.d.index, s), a = ir::mentions(tile.a.index, s), b = ir::mentions(tile.b.index, s);
  if (d && a && !b) return &tile.outer_i;
  if (d && b && !a) return &tile.outer_j;
  if (a && b && !d) return &tile.outer_k;
  return nullptr;
}

}  // namespace

std::optional<MatmulUpdate> parse_matmul_update(const ir::Set& x) {
  const auto* top = std::get_if<ir::Apply>(&x.value->node);
  if (!top) return std::nullopt;
  auto is_d = [&](const ir::ScalarRef& s) { const auto* g = as_get(s); return g && g->node == x.node && g->index == x.index; };
  MatmulUpdate u{nullptr, nullptr, false, top->dtype};
  if (top->op == ir::Op::Fma && top->args.size() == 3 && is_d(top->args[2])) {
    u.fused = true;
    u.a = as_get(top->args[0]);
    u.b = as_get(top->args[1]);
  } else if (top->op == ir::Op::Add && top->args.size() == 2 && is_d(top->args[0]) != is_d(top->args[1])) {
    const auto& product = is_d(top->args[0]) ? top->args[1] : top->args[0];
    const auto* mul = std::get_if<ir::Apply>(&product->node);
    if (!mul || mul->op != ir::Op::Mul || mul->dtype != top->dtype || mul->args.size() != 2) return std::nullopt;
    u.a = as_get(mul->args[0]);
    u.b = as_get(mul->args[1]);
  }
  if (!u.a || !u.b || u.a->node == x.node || u.b->node == x.node) return std::nullopt;
  return u;
}

std::optional<ir::TileMma> match_update(const ir::Set& x, const Tensorize& t) {
  const auto u = parse_matmul_update(x);
  if (!u || !pattern(x.index, t, true, true, false)) return std::nullopt;
  const ir::Get* a = u->a;
  const ir::Get* b = u->b;
  if (!pattern(a->index, t, true, false, true)) std::swap(a, b);
  if (!pattern(a->index, t, true, false, true) || !pattern(b->index, t, false, true, true)) return std::nullopt;
  ir::TileMma tile;
  tile.d = {x.node, x.index};
  tile.a = {a->node, a->index};
  tile.b = {b->node, b->index};
  tile.fused = u->fused;
  tile.dtype = u->dtype;
  return tile;
}


ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Tensorize& t) {
  std::string action = "tensorize i=" + name_of(r, t.i) + " j=" + name_of(r, t.j) + " k=" + name_of(r, t.k);
  for (const ir::Symbol f : t.fold) action += (f == t.fold.front() ? " fold " : ", ") + name_of(r, f);
  std::vector<LoopSite> sites = {require_loop(r, t.i, action), require_loop(r, t.j, action),
                                 require_loop(r, t.k, action)};
  for (const ir::Symbol f : t.fold) sites.push_back(require_loop(r, f, action));
  const LoopSite* top = &sites[0];
  for (const auto& s : sites)
    if (s.enclosing.size() < top->enclosing.size()) top = &s;
  ir::StmtRef leaf;
  const auto loops = perfect_nest(*top->loop, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  const std::string shape = "d[.., i, j] = add(d[.., i, j], mul(a[.., i, k], b[.., k, j])) or fma(a, b, d)";
  auto innermost_three = [&](const LoopSite& s) {
    const auto at = std::find(loops.begin(), loops.end(), s.loop);
    return at != loops.end() && at - loops.begin() >= static_cast<std::ptrdiff_t>(loops.size()) - 3;
  };
  if (loops.size() != sites.size() || !store ||
      !std::all_of(sites.begin(), sites.begin() + 3, innermost_three) ||
      std::any_of(sites.begin(), sites.end(), [&](const LoopSite& s) { return std::find(loops.begin(), loops.end(), s.loop) == loops.end(); }))
    throw_schedule_error(r, top->loop->index, action,
                         t.fold.empty() ? "loops i, j, k are not a perfect nest of exactly three loops around one store"
                                        : "the folded loops and i, j, k (innermost) are not the whole perfect nest around one store",
                         "none");
  for (const ir::For* f : loops)
    if (f->axis != ir::AxisType::Serial)
      throw_schedule_error(r, f->index, action, "the nest's loops must be Serial", "Retype them to serial first");
  auto tile = match_update(*store, Tensorize{t.i, t.j, t.k});
  if (!tile) {
    std::string alternative = "none: this nest is not a matmul (" + shape + ")";
    const ir::Symbol s[3] = {t.i, t.j, t.k};
    for (int p : {0, 1, 2})
      for (int q : {0, 1, 2})
        if (p != q && match_update(*store, Tensorize{s[p], s[q], s[3 - p - q]}))
          alternative = "tensorize i=" + name_of(r, s[p]) + " j=" + name_of(r, s[q]) + " k=" + name_of(r, s[3 - p - q]);
    throw_schedule_error(r, top->loop->index, action, "the store is not a matmul update " + shape, alternative);
  }
  for (const ir::For* f : loops) {
    ir::TileAxis axis{f->index, f->begin, f->end};
    if (f->index == t.i) tile->i = axis;
    else if (f->index == t.j) tile->j = axis;
    else if (f->index == t.k) tile->k = axis;
    else if (auto* role = fold_role(*tile, f->index)) role->push_back(axis);
    else
      throw_schedule_error(r, f->index, action,
                           "the loop is not a row (in d and a only), a column (in d and b only) or a "
                           "reduction step (in a and b only) of the tile",
                           "leave it out of fold; keep it outside the tile");
  }
  // A renderer gives each cell of the tile its own accumulator (a register, a thread), so two
  // cells storing to one element of d would lose one's updates: d[i + j] is no tile, folded or not.
  std::vector<ir::TileAxis> cells = {tile->i, tile->j};
  cells.insert(cells.end(), tile->outer_i.begin(), tile->outer_i.end());
  cells.insert(cells.end(), tile->outer_j.begin(), tile->outer_j.end());
  if (!ir::distinct_cells(*tile->d.node, tile->d.index, cells))
    throw_schedule_error(r, top->loop->index, action,
                         std::string(tile->folded() ? "folded, " : "") + "two cells of the tile could store to one element of " +
                             tile->d.node->debug_name(),
                         tile->folded() ? "fold fewer row or column loops" : "none: the nest is no tile (keep it a loop nest)");
  tile->accum = ir::Op::Add;
  tile->fallback = top->stmt;
  const ir::StmtRef replacement = ir::tile_mma(*tile);
  return with_body(r, replace_loop(r.body, top->loop->index, [&](const ir::For&) { return replacement; }));
}

// In traces: tensorize <i> <j> <k> [fold <loop>...]
std::string_view trace_name(Kind<Tensorize>) { return "tensorize"; }

void print_args(StepWriter& out, const Tensorize& t) {
  out.loop(t.i).loop(t.j).loop(t.k);
  if (!t.fold.empty()) out.word("fold");
  for (const ir::Symbol s : t.fold) out.loop(s);
}

Tensorize parse_args(const StepReader& in, Kind<Tensorize>) {
  Tensorize t{in.loop(1), in.loop(2), in.loop(3)};
  if (in.size() > 4 && in.word(4) != "fold") in.bad("expected fold");
  for (std::size_t k = 5; k < in.size(); ++k) t.fold.push_back(in.loop(k));
  return t;
}

}  // namespace cannl::schedule::detail
