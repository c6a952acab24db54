// Tensorize (semantics-backend.md 8.2): a perfect serial nest of loops i, j, k (any order)
// around one matmul update d[.., i, j] = add(d[.., i, j], mul(a[.., i, k], b[.., k, j])) (or
// fma(a, b, d)) becomes a TileMma keeping the nest as its fallback. The fallback is the meaning,
// so the transform is always legal once the pattern matches.
#include <algorithm>

#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

const ir::Get* as_get(const ir::ScalarRef& s) { return s ? std::get_if<ir::Get>(&s->node) : nullptr; }

bool mentions(const std::vector<ir::AxisIndex>& index, ir::Symbol s) {
  return std::any_of(index.begin(), index.end(), [&](const ir::AxisIndex& i) { return i.mentions(s); });
}

// Which of i, j, k an operand's index mentions must be exactly `want` (i, j, k flags).
bool pattern(const std::vector<ir::AxisIndex>& index, const Tensorize& t, bool wi, bool wj, bool wk) {
  return mentions(index, t.i) == wi && mentions(index, t.j) == wj && mentions(index, t.k) == wk;
}

}  // namespace

std::optional<ir::TileMma> match_update(const ir::Set& x, const Tensorize& t) {
  const auto* top = std::get_if<ir::Apply>(&x.value->node);
  if (!top) return std::nullopt;
  ir::TileMma tile;
  tile.d = {x.node, x.index};
  tile.dtype = top->dtype;
  const ir::Get* a = nullptr;
  const ir::Get* b = nullptr;
  const bool d_ok = pattern(x.index, t, true, true, false);
  auto is_d = [&](const ir::ScalarRef& s) { const auto* g = as_get(s); return g && g->node == x.node && g->index == x.index; };
  if (top->op == ir::Op::Fma && top->args.size() == 3 && is_d(top->args[2])) {
    tile.fused = true;
    a = as_get(top->args[0]);
    b = as_get(top->args[1]);
  } else if (top->op == ir::Op::Add && top->args.size() == 2 && is_d(top->args[0]) != is_d(top->args[1])) {
    const auto& product = is_d(top->args[0]) ? top->args[1] : top->args[0];
    const auto* mul = std::get_if<ir::Apply>(&product->node);
    if (!mul || mul->op != ir::Op::Mul || mul->dtype != top->dtype || mul->args.size() != 2) return std::nullopt;
    a = as_get(mul->args[0]);
    b = as_get(mul->args[1]);
  }
  if (!d_ok || !a || !b) return std::nullopt;
  if (!pattern(a->index, t, true, false, true)) std::swap(a, b);
  if (!pattern(a->index, t, true, false, true) || !pattern(b->index, t, false, true, true)) return std::nullopt;
  if (a->node == x.node || b->node == x.node) return std::nullopt;
  tile.a = {a->node, a->index};
  tile.b = {b->node, b->index};
  return tile;
}


ir::LoweredRoutine apply_tensorize(const ir::LoweredRoutine& r, const Tensorize& t) {
  const std::string action =
      "tensorize i=" + name_of(r, t.i) + " j=" + name_of(r, t.j) + " k=" + name_of(r, t.k);
  const std::vector<LoopSite> sites = {require_loop(r, t.i, action), require_loop(r, t.j, action),
                                       require_loop(r, t.k, action)};
  const LoopSite* top = &sites[0];
  for (const auto& s : sites)
    if (s.enclosing.size() < top->enclosing.size()) top = &s;
  ir::StmtRef leaf;
  const auto loops = perfect_nest(*top->loop, leaf);
  const auto* store = leaf ? std::get_if<ir::Set>(&leaf->node) : nullptr;
  const std::string shape = "d[.., i, j] = add(d[.., i, j], mul(a[.., i, k], b[.., k, j])) or fma(a, b, d)";
  if (loops.size() != 3 || !store ||
      std::any_of(sites.begin(), sites.end(), [&](const LoopSite& s) { return std::find(loops.begin(), loops.end(), s.loop) == loops.end(); }))
    throw_schedule_error(r, top->loop->index, action,
                         "loops i, j, k are not a perfect nest of exactly three loops around one store", "none");
  for (const ir::For* f : loops)
    if (f->axis != ir::AxisType::Serial)
      throw_schedule_error(r, f->index, action, "the nest's loops must be Serial", "Retype them to serial first");
  auto tile = match_update(*store, t);
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
    if (f->index == t.j) tile->j = axis;
    if (f->index == t.k) tile->k = axis;
  }
  tile->accum = ir::Op::Add;
  tile->fallback = top->stmt;
  const ir::StmtRef replacement = ir::tile_mma(*tile);
  return with_body(r, replace_loop(r.body, top->loop->index, [&](const ir::For&) { return replacement; }));
}

}  // namespace cannl::schedule::detail
