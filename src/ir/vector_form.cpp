// What a target runs as written (target.h): exact vector forms of Vectorized loops, matmul tiles
// as the micro-kernel.
#include <algorithm>

#include "cannl/ir/target.h"

namespace cannl::ir {

bool contiguous_in(const std::vector<AxisIndex>& index, Symbol s) {
  if (index.empty()) return false;
  for (std::size_t ax = 0; ax + 1 < index.size(); ++ax)
    if (index[ax].mentions(s)) return false;
  int count = 0;
  for (const auto& term : index.back().terms)
    if (term.symbol == s) count += term.coeff == 1 ? 1 : 2;
  return count == 1;
}

bool loop_invariant(const ScalarRef& s, Symbol loop) {
  if (std::holds_alternative<Constant>(s->node)) return true;
  if (const auto* g = std::get_if<Get>(&s->node)) return !mentions(g->index, loop);
  if (const auto* a = std::get_if<Apply>(&s->node))
    return std::all_of(a->args.begin(), a->args.end(), [&](const ScalarRef& x) { return loop_invariant(x, loop); });
  return false;
}

namespace {

// Statements of a loop body that is a flat sequence of Sets; empty when it is anything else.
std::vector<const Set*> flat_sets(const StmtRef& body) {
  if (const auto* s = std::get_if<Set>(&body->node)) return {s};
  const auto* q = std::get_if<Seq>(&body->node);
  if (q == nullptr) return {};
  std::vector<const Set*> out;
  for (const auto& x : q->stmts) {
    const auto* s = std::get_if<Set>(&x->node);
    if (s == nullptr) return {};
    out.push_back(s);
  }
  return out;
}

// Reads of `node` in `s` other than at `index` (a loop-carried dependence the vector form breaks).
bool reads_elsewhere(const ScalarRef& s, const TensorNode& node, const std::vector<AxisIndex>& index) {
  if (const auto* g = std::get_if<Get>(&s->node)) return g->node->id == node.id && g->index != index;
  if (const auto* a = std::get_if<Apply>(&s->node))
    return std::any_of(a->args.begin(), a->args.end(), [&](const ScalarRef& x) { return reads_elsewhere(x, node, index); });
  return !std::holds_alternative<Constant>(s->node);
}

bool reads(const ScalarRef& s, const TensorNode& node) {
  if (const auto* g = std::get_if<Get>(&s->node)) return g->node->id == node.id;
  if (const auto* a = std::get_if<Apply>(&s->node))
    return std::any_of(a->args.begin(), a->args.end(), [&](const ScalarRef& x) { return reads(x, node); });
  return !std::holds_alternative<Constant>(s->node);
}

// An f32 expression of constants, reads (splats when they do not move with the loop, contiguous
// vectors when they do) and ops with exact vector forms.
bool vector_expr(const ScalarRef& s, Symbol loop, const Target& target) {
  if (scalar_dtype(*s) != DType::F32) return false;
  if (loop_invariant(s, loop)) return true;  // a splat of the scalar value (of any inner dtype)
  if (const auto* g = std::get_if<Get>(&s->node))
    return g->node->dtype == DType::F32 && (!mentions(g->index, loop) || contiguous_in(g->index, loop));
  const auto* a = std::get_if<Apply>(&s->node);
  return a != nullptr && target.renders_vector_op(a->op) &&
         std::all_of(a->args.begin(), a->args.end(), [&](const ScalarRef& x) { return vector_expr(x, loop, target); });
}

bool accumulation(const Set& s, Symbol loop, const Target& target) {
  const auto* add = std::get_if<Apply>(&s.value->node);
  if (s.node->dtype != DType::F32 || add == nullptr || add->op != Op::Add || add->dtype != DType::F32)
    return false;
  auto self = [&](const ScalarRef& x) {
    const auto* g = std::get_if<Get>(&x->node);
    return g != nullptr && g->node->id == s.node->id && g->index == s.index;
  };
  const int rest_at = self(add->args[0]) ? 1 : self(add->args[1]) ? 0 : -1;
  if (rest_at < 0) return false;
  const ScalarRef& rest = add->args[static_cast<std::size_t>(rest_at)];
  // Serially the rest would see the running sum.
  return !reads(rest, *s.node) && vector_expr(rest, loop, target);
}

// Reads of the nodes `sets` write only at the cell they are written at (the same lane's, before
// or after its write: per-statement rendering keeps each lane's order), and no node written at
// two cells (the lanes' statement order would decide the last write).
bool lanes_independent(const std::vector<const Set*>& sets) {
  for (std::size_t k = 0; k < sets.size(); ++k) {
    for (std::size_t w = 0; w < sets.size(); ++w) {
      if (sets[w]->node->id != sets[k]->node->id) continue;
      if (sets[w]->index != sets[k]->index) return false;
    }
    for (const Set* writer : sets)
      if (reads_elsewhere(sets[k]->value, *writer->node, writer->index)) return false;
  }
  return true;
}

// Vector stores and loads of every set, statement by statement, equal the serial loop when the
// lanes are independent: a node written at two cells (x[s] and x[s + 1]) would take its last
// write from the later statement rather than the later iteration.
bool elementwise(const std::vector<const Set*>& sets, Symbol loop, const Target& target) {
  for (const Set* s : sets) {
    if (s->node->dtype != DType::F32 || !contiguous_in(s->index, loop)) return false;
    if (!vector_expr(s->value, loop, target)) return false;
  }
  return lanes_independent(sets);
}

}  // namespace

VectorForm vector_form(const For& f, const Target& target) {
  if (target.vector_bytes <= 0 || f.end - f.begin < target.vector_lanes()) return VectorForm::None;
  const std::vector<const Set*> sets = flat_sets(f.body);
  if (sets.empty()) return VectorForm::None;
  if (sets.size() == 1 && !mentions(sets[0]->index, f.index))
    return accumulation(*sets[0], f.index, target) ? VectorForm::Accumulation : VectorForm::None;
  return elementwise(sets, f.index, target) ? VectorForm::Elementwise : VectorForm::None;
}

bool gpu_vector_dtype(DType t) { return t == DType::F32 || t == DType::I32 || t == DType::U32; }

bool gpu_vector_loop(const For& f, const Target& target) {
  const int bytes = target.gpu_vector_bytes;  // 2 or 4 lanes: float2, float4
  if (!target.workgroups || (bytes != 8 && bytes != 16) || f.begin != 0 || f.end != bytes / 4)
    return false;
  const std::vector<const Set*> sets = flat_sets(f.body);
  if (sets.empty()) return false;
  for (const Set* s : sets)
    if (!gpu_vector_dtype(s->node->dtype) || !contiguous_in(s->index, f.index)) return false;
  return lanes_independent(sets);
}

bool vector_aligned(const TensorNode& node, const std::vector<AxisIndex>& index, Symbol lane, std::int64_t lanes) {
  if (index.size() != node.dims.size() || flat_stride(node, index, lane) != 1) return false;
  std::int64_t axis_stride = 1;
  for (std::size_t ax = index.size(); ax-- > 0;) {
    if ((index[ax].offset * axis_stride) % lanes != 0) return false;
    for (const auto& term : index[ax].terms)
      if (term.symbol != lane && (term.coeff * axis_stride) % lanes != 0) return false;
    axis_stride *= node.dims[ax];
  }
  return true;
}

TileGroups tile_groups(const TileMma& t) {
  TileGroups g{t.outer_i, t.outer_j, t.outer_k};
  g.rows.push_back(t.i);
  g.cols.push_back(t.j);
  g.steps.push_back(t.k);
  return g;
}

bool is_f32_matmul_tile(const TileMma& t, const Target& target) {
  const auto f32 = [](const TileOperand& o) { return o.node->dtype == DType::F32; };
  if (t.dtype != DType::F32 || t.accum != Op::Add || !f32(t.d) || !f32(t.a) || !f32(t.b)) return false;
  if (t.d.node->id == t.a.node->id || t.d.node->id == t.b.node->id) return false;
  if (t.rows() * t.cols() * t.steps() < target.min_tile_work) return false;
  // d[i, j], a[i, k], b[k, j]: an operand must not move along the loops it is broadcast over.
  const TileGroups g = tile_groups(t);
  const auto still = [](const TileOperand& o, const std::vector<TileAxis>& axes) {
    return std::all_of(axes.begin(), axes.end(),
                       [&](const TileAxis& x) { return flat_stride(*o.node, o.index, x.symbol) == 0; });
  };
  return still(t.d, g.steps) && still(t.a, g.cols) && still(t.b, g.rows);
}

bool runs_as_kernel(const TileMma& t, const Target& target) {
  return target.vector_bytes > 0 && target.gemm.mr > 0 && is_f32_matmul_tile(t, target);
}

}  // namespace cannl::ir
