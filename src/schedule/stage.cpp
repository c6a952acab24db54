// Stage (semantics-backend.md 8.2, the CPU packing copy, shared = false): inside an anchor loop,
// reads of a source node go through a fresh tile node filled by a copy nest at the top of the
// anchor's body, so the computation reads a small contiguous panel. The tile spans the bounding
// box of the reads' index over the loops inside the anchor (every corner of an affine box is
// reached by some iteration, so the copy stays in bounds). Same dtype, same values: bitwise.
#include <algorithm>
#include <map>
#include <set>

#include "cannl/ir/rewrite.h"
#include "cannl/ir/tree_mapper.h"
#include "schedule/access_relations.h"
#include "schedule/schedule_error.h"
#include "schedule/transform_impls.h"

namespace cannl::schedule::detail {

namespace {

// The reads of `source` in `body`: one common index, or a description of why not.
struct SourceReads {
  std::optional<std::vector<ir::AxisIndex>> index;
  std::string problem;
};

SourceReads common_reads(const ir::StmtRef& body, const ir::NodeRef& source) {
  const LoopAccesses acc = collect_accesses(body);
  SourceReads out;
  for (const Access& a : acc.accesses) {
    if (a.node != source) continue;
    if (a.write) return {std::nullopt, "the anchor loop writes " + source->debug_name()};
    if (a.dyn_axis >= 0 || a.guarded) return {std::nullopt, "a read of " + source->debug_name() + " is dynamic or guarded"};
    if (out.index && *out.index != a.index) return {std::nullopt, "reads of " + source->debug_name() + " use different indices"};
    out.index = a.index;
  }
  if (!out.index) out.problem = "the anchor loop does not read " + source->debug_name();
  // The tile spans the reads' box over the loops inside the anchor; an empty loop has no box
  // (its "range" [begin, begin - 1] would make the copy read cells before the node).
  for (const ir::AxisIndex& i : out.index.value_or(std::vector<ir::AxisIndex>{}))
    for (const auto& t : i.terms)
      if (const auto it = acc.inner.find(t.symbol); it != acc.inner.end() && it->second.hi < it->second.lo)
        return {std::nullopt, "the reads of " + source->debug_name() + " are under an empty loop (nothing to stage)"};
  return out;
}

// The part of `i` over loops inside the anchor, and its minimum and maximum.
struct AxisSpan { ir::AxisIndex inner, outer; std::int64_t lo = 0, hi = 0; };

AxisSpan span(const ir::AxisIndex& i, const std::map<ir::Symbol, SymbolRange>& inner_loops) {
  AxisSpan out;
  out.outer.offset = i.offset;
  for (const auto& t : i.terms) {
    const auto it = inner_loops.find(t.symbol);
    if (it == inner_loops.end()) { out.outer.terms.push_back(t); continue; }
    out.inner.terms.push_back(t);
    out.lo += std::min(t.coeff * it->second.lo, t.coeff * it->second.hi);
    out.hi += std::max(t.coeff * it->second.lo, t.coeff * it->second.hi);
  }
  return out;
}

// The tile of reads at `index`: its dims, the tile index replacing each read, and the copy
// nest's loops with the source cell each tile cell holds.
struct TileGeometry {
  std::vector<std::int64_t> dims;
  std::vector<ir::AxisIndex> tile_read, source_at_tile;
  std::vector<ir::Symbol> copy_loops;
};

TileGeometry tile_geometry(const std::vector<ir::AxisIndex>& index, const std::map<ir::Symbol, SymbolRange>& inner) {
  TileGeometry g;
  for (const ir::AxisIndex& i : index) {
    const AxisSpan s = span(i, inner);
    g.dims.push_back(s.hi - s.lo + 1);
    ir::AxisIndex read = s.inner;
    read.offset = -s.lo;
    g.tile_read.push_back(read);
    g.copy_loops.push_back(ir::fresh_symbol());
    ir::AxisIndex at = s.outer;
    at.offset += s.lo;
    at.terms.push_back({1, g.copy_loops.back()});
    g.source_at_tile.push_back(at);
  }
  return g;
}

class ReadRedirect : public ir::TreeMapper {
 public:
  ReadRedirect(ir::NodeRef source, ir::NodeRef tile, std::vector<ir::AxisIndex> tile_index)
      : source_(std::move(source)), tile_(std::move(tile)), tile_index_(std::move(tile_index)) {}
  ir::ScalarRef map_scalar(const ir::ScalarRef& s) override {
    const auto* g = std::get_if<ir::Get>(&s->node);
    if (g && g->node == source_) return ir::get(tile_, tile_index_);
    return map_children(s);
  }

 private:
  ir::NodeRef source_, tile_;
  std::vector<ir::AxisIndex> tile_index_;
};

// The packed node of a hoisted stage: one axis per loop around the anchor that the reads
// mention (outermost first, its range shifted to start at 0), then the tile's axes. `fill`
// copies every cell once: the packed loops run their whole ranges, which the routine's loops
// also do (the anchor is under no guard), so each source cell read is one the routine reads.
struct PackedGeometry {
  std::vector<const ir::For*> loops;       // the loops around the anchor the reads mention
  std::vector<ir::AxisIndex> packed_read;  // replaces each read of the source
  ir::StmtRef fill;
};

PackedGeometry packed_geometry(const ir::LoweredRoutine& r, const LoopSite& site, const ir::NodeRef& source,
                               const ir::NodeRef& packed_node, const TileGeometry& g,
                               const std::vector<ir::AxisIndex>& read, const std::string& action) {
  std::vector<const ir::For*> around = site.enclosing;
  around.push_back(site.loop);
  std::set<ir::Symbol> known;
  for (const ir::For* f : around) known.insert(f->index);
  const auto inner = collect_accesses(site.loop->body).inner;
  for (const ir::AxisIndex& i : read)
    for (const auto& term : span(i, inner).outer.terms)
      if (!known.contains(term.symbol))
        throw_schedule_error(r, site.loop->index, action, "a read of " + source->debug_name() + " depends on a static index",
                             "stage it in the routine (hoisted = false)");
  PackedGeometry p;
  for (const ir::For* f : around)
    if (ir::mentions(read, f->index)) p.loops.push_back(f);
  std::vector<ir::AxisIndex> packed_cell, source_cell = g.source_at_tile;
  std::vector<std::pair<ir::Symbol, const ir::For*>> fill_loops;
  std::map<ir::Symbol, ir::AxisIndex> at_fill;
  for (const ir::For* f : p.loops) {
    ir::AxisIndex at = ir::AxisIndex::iterator(f->index);
    at.offset = -f->begin;
    p.packed_read.push_back(at);
    const ir::Symbol s = ir::fresh_symbol();
    fill_loops.push_back({s, f});
    packed_cell.push_back(ir::AxisIndex::iterator(s));
    ir::AxisIndex value = ir::AxisIndex::iterator(s);
    value.offset = f->begin;
    at_fill[f->index] = value;
  }
  for (ir::AxisIndex& c : source_cell) c = ir::substitute(c, at_fill);
  for (const ir::AxisIndex& a : g.tile_read) p.packed_read.push_back(a);
  for (const ir::Symbol s : g.copy_loops) packed_cell.push_back(ir::AxisIndex::iterator(s));
  p.fill = ir::set(packed_node, packed_cell, ir::get(source, source_cell), "pack " + source->debug_name());
  for (std::size_t d = g.dims.size(); d-- > 0;) p.fill = ir::for_loop(g.copy_loops[d], 0, g.dims[d], p.fill);
  for (std::size_t k = fill_loops.size(); k-- > 0;) {
    const ir::For& f = *fill_loops[k].second;
    p.fill = ir::for_loop(fill_loops[k].first, 0, f.end - f.begin, p.fill);
  }
  return p;
}

// `g` without its unit axes: the packed node indexes those by the loops around the anchor.
TileGeometry without_unit_axes(TileGeometry g) {
  std::map<ir::Symbol, ir::AxisIndex> zero;
  TileGeometry out;
  out.source_at_tile = g.source_at_tile;
  for (std::size_t d = 0; d < g.dims.size(); ++d) {
    if (g.dims[d] == 1) {
      zero[g.copy_loops[d]] = ir::AxisIndex{};
      continue;
    }
    out.dims.push_back(g.dims[d]);
    out.tile_read.push_back(g.tile_read[d]);
    out.copy_loops.push_back(g.copy_loops[d]);
  }
  for (ir::AxisIndex& c : out.source_at_tile) c = ir::substitute(c, zero);
  return out;
}

// Whether any statement of the routine writes `source` (stores, dynamic stores, zeroing).
bool routine_writes(const ir::LoweredRoutine& r, const ir::NodeRef& source) {
  for (const Access& a : collect_accesses(r.body).accesses)
    if (a.write && a.node == source) return true;
  return false;
}

ir::LoweredRoutine hoisted_stage(const ir::LoweredRoutine& r, const LoopSite& site, const ir::NodeRef& source,
                                 const std::vector<ir::AxisIndex>& read, const std::string& action) {
  if (routine_writes(r, source))
    throw_schedule_error(r, site.loop->index, action, "the routine writes " + source->debug_name() + ", so its packing would go stale within a call",
                         "stage it in the routine (hoisted = false)");
  if (site.under_if || site.in_local_scope)
    throw_schedule_error(r, site.loop->index, action, "the anchor loop runs under a guard, so the packing could read cells the routine never reads",
                         "an anchor outside every guard, or hoisted = false");
  const TileGeometry g = without_unit_axes(tile_geometry(read, collect_accesses(site.loop->body).inner));
  const ir::NodeRef packed = ir::make_node(source->debug_name() + "_packed", source->dtype, {});
  const PackedGeometry p = packed_geometry(r, site, source, packed, g, read, action);
  for (const ir::For* f : p.loops) packed->dims.push_back(f->end - f->begin);
  for (const std::int64_t d : g.dims) packed->dims.push_back(d);
  ReadRedirect redirect(source, packed, p.packed_read);
  ir::LoweredRoutine out = with_body(r, replace_loop(r.body, site.loop->index, [&](const ir::For& f) {
    return ir::for_loop(f.index, f.begin, f.end, redirect.map_stmt(f.body), f.axis);
  }));
  out.packed.push_back({source, packed, p.fill});
  return out;
}

}  // namespace

ir::LoweredRoutine apply_transform(const ir::LoweredRoutine& r, const Stage& t) {
  const auto nodes = ir::nodes_of(r.body);
  const auto found = std::find_if(nodes.begin(), nodes.end(), [&](const ir::NodeRef& n) { return n->id == t.source_id; });
  const std::string action = std::string(t.hoisted ? "hoisted stage n" : "stage n") + std::to_string(t.source_id) +
                             " at " + name_of(r, t.anchor);
  const LoopSite site = require_loop(r, t.anchor, action);
  if (found == nodes.end())
    throw_schedule_error(r, t.anchor, action, "the routine does not touch that node", "a node the anchor loop reads");
  const ir::NodeRef source = *found;
  const SourceReads reads = common_reads(site.loop->body, source);
  if (!reads.index)
    throw_schedule_error(r, t.anchor, action, reads.problem, "an anchor loop whose reads of the node share one index");
  if (t.hoisted) return hoisted_stage(r, site, source, *reads.index, action);
  // Every iteration of the anchor rewrites the one tile: the anchor and the loops around it must
  // run in order (a Grid anchor would race on the tile).
  std::vector<const ir::For*> around = site.enclosing;
  around.push_back(site.loop);
  for (const ir::For* f : around)
    if (f->axis != ir::AxisType::Serial && f->axis != ir::AxisType::Unrolled)
      throw_schedule_error(r, f->index, action,
                           "the tile would be rewritten by the parallel iterations of " + name_of(r, f->index),
                           "stage at a loop inside the parallel one, or before retyping it");
  const TileGeometry g = tile_geometry(*reads.index, collect_accesses(site.loop->body).inner);
  const ir::NodeRef tile = ir::make_node(source->debug_name() + "_tile", source->dtype, g.dims);
  std::vector<ir::AxisIndex> tile_cell;
  for (const ir::Symbol s : g.copy_loops) tile_cell.push_back(ir::AxisIndex::iterator(s));
  ir::StmtRef copy = ir::set(tile, tile_cell, ir::get(source, g.source_at_tile), "stage " + source->debug_name());
  for (std::size_t d = g.dims.size(); d-- > 0;) copy = ir::for_loop(g.copy_loops[d], 0, g.dims[d], copy);
  ReadRedirect redirect(source, tile, g.tile_read);
  const ir::StmtRef body = ir::seq({copy, redirect.map_stmt(site.loop->body)});
  return with_body(r, replace_loop(r.body, t.anchor, [&](const ir::For& f) {
    return ir::for_loop(f.index, f.begin, f.end, body, f.axis);
  }));
}

// In traces: stage <source node> <anchor loop> [hoisted]
std::string_view trace_name(Kind<Stage>) { return "stage"; }

void print_args(StepWriter& out, const Stage& t) {
  out.node(t.source_id).loop(t.anchor);
  if (t.hoisted) out.word("hoisted");
}

Stage parse_args(const StepReader& in, Kind<Stage>) {
  Stage t{in.node(1), in.loop(2)};
  if (in.size() > 3) {
    if (in.word(3) != "hoisted") in.bad("expected 'hoisted' or nothing after the anchor loop");
    t.hoisted = true;
  }
  return t;
}

}  // namespace cannl::schedule::detail
