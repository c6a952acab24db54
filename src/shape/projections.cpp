// derive_projections (semantics-frontend.md 4.2): over the closed shapes of one step, union-find
// over the axes the step equates; a size-1 operand axis against a longer result axis is read at
// Fixed 0 (broadcast); every class of size > 1 without a pinned index gets one fresh iterator,
// in first-occurrence order over LHS then RHS axes (memory order batch, output, input).
// Reductions are emergent: iterators absent from project_lhs.

#include <map>
#include <numeric>

#include "cannl/support/error.h"
#include "shape/errors.h"
#include "shape/projections.h"

namespace cannl::shape {
namespace {

constexpr RowKind kMemoryOrder[] = {RowKind::Batch, RowKind::Output, RowKind::Input};

/// The axes of the step's tensors (0 = result, 1.. = operands) plus virtual label nodes.
class AxisGraph {
 public:
  explicit AxisGraph(const std::vector<const Shape*>& tensors) {
    for (const Shape* t : tensors) {
      std::map<RowKind, std::size_t> starts, lens;
      for (RowKind k : kMemoryOrder) {
        starts[k] = sizes_.size();
        for (const auto& d : subst(t->row(k)).dims) sizes_.push_back(d.size);
        lens[k] = sizes_.size() - starts[k];
      }
      row_start_.push_back(starts);
      row_len_.push_back(lens);
      tensor_end_.push_back(sizes_.size());
    }
    num_tensor_nodes_ = sizes_.size();
    parent_.resize(sizes_.size());
    std::iota(parent_.begin(), parent_.end(), 0);
    pins_.resize(sizes_.size());
  }

  std::size_t node(std::size_t tensor, RowKind kind, std::size_t i) const { return row_start_[tensor].at(kind) + i; }
  std::size_t row_len(std::size_t tensor, RowKind kind) const { return row_len_[tensor].at(kind); }
  std::int64_t size(std::size_t n) const { return sizes_[n]; }

  std::size_t virtual_node(const std::string& key) {
    auto [it, fresh] = virtual_.emplace(key, parent_.size());
    if (fresh) {
      parent_.push_back(parent_.size());
      sizes_.push_back(-1);
      pins_.emplace_back();
    }
    return it->second;
  }
  std::size_t find(std::size_t n) {
    while (parent_[n] != n) n = parent_[n] = parent_[parent_[n]];
    return n;
  }
  void unite(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }
  void pin(std::size_t n, ir::AxisIndex at) { pins_[n] = std::move(at); }
  const std::optional<ir::AxisIndex>& pinned(std::size_t n) const { return pins_[n]; }

  /// `res ⊑ opnd` for one row pair, aligned from the right.
  void refine(std::size_t rt, RowKind rk, std::size_t ot, RowKind ok) {
    const std::size_t rn = row_len(rt, rk), on = row_len(ot, ok);
    for (std::size_t i = 1; i <= on; ++i) {
      const std::size_t o = node(ot, ok, on - i);
      if (i > rn) {  // an extra broadcastable-1 operand axis
        pin(o, ir::AxisIndex::fixed(0));
        continue;
      }
      const std::size_t r = node(rt, rk, rn - i);
      if (size(o) == 1 && size(r) != 1) pin(o, ir::AxisIndex::fixed(0));
      else unite(r, o);
    }
  }
  void equate_rows(std::size_t at, RowKind ak, std::size_t bt, RowKind bk, std::size_t a_skip = 0) {
    const std::size_t n = row_len(bt, bk);
    internal_check(row_len(at, ak) == n + a_skip, "projection: equated rows differ in length");
    for (std::size_t i = 0; i < n; ++i) unite(node(at, ak, a_skip + i), node(bt, bk, i));
  }

  std::size_t num_tensor_nodes() const { return num_tensor_nodes_; }
  std::size_t tensor_end(std::size_t t) const { return tensor_end_[t]; }

 private:
  std::vector<std::map<RowKind, std::size_t>> row_start_, row_len_;
  std::vector<std::size_t> tensor_end_;
  std::vector<std::int64_t> sizes_;
  std::vector<std::size_t> parent_;
  std::vector<std::optional<ir::AxisIndex>> pins_;
  std::map<std::string, std::size_t> virtual_;
  std::size_t num_tensor_nodes_ = 0;
};

void match_einsum_row(AxisGraph& g, std::size_t t, RowKind kind, const RowSpec& rs) {
  const std::size_t len = g.row_len(t, kind), nb = rs.beg.size(), nd = rs.dims.size();
  internal_check(len >= nb + nd && (rs.has_ellipsis || len == nb + nd),
                 "projection: einsum row does not match its closed shape");
  auto label = [&](const AxisSpec& a, std::size_t i) {
    const std::size_t n = g.node(t, kind, i);
    if (a.kind == AxisSpec::Kind::Fixed) g.pin(n, ir::AxisIndex::fixed(a.index));
    else g.unite(n, g.virtual_node("label:" + a.label));
  };
  for (std::size_t i = 0; i < nb; ++i) label(rs.beg[i], i);
  for (std::size_t i = 0; i < nd; ++i) label(rs.dims[i], len - nd + i);
  const std::string key = rs.is_context ? "ctx:" + std::to_string(static_cast<int>(kind)) : "row:" + rs.var_name;
  for (std::size_t i = nb; i < len - nd; ++i)
    g.unite(g.node(t, kind, i), g.virtual_node(key + "#" + std::to_string(i - nb)));
}

void relate(AxisGraph& g, const StepRecord& rec) {
  const auto& logic = rec.step.logic;
  const std::size_t n_ops = rec.step.operands.size();
  if (std::holds_alternative<Pointwise>(logic)) {
    for (std::size_t t = 1; t <= n_ops; ++t)
      for (RowKind k : kMemoryOrder) g.refine(0, k, t, k);
  } else if (std::holds_alternative<Compose>(logic)) {
    g.refine(1, RowKind::Input, 2, RowKind::Output);
    g.refine(0, RowKind::Batch, 1, RowKind::Batch);
    g.refine(0, RowKind::Batch, 2, RowKind::Batch);
    g.refine(0, RowKind::Input, 2, RowKind::Input);
    g.refine(0, RowKind::Output, 1, RowKind::Output);
    if (n_ops == 3)
      for (RowKind k : kMemoryOrder) g.refine(0, k, 3, k);
  } else if (std::holds_alternative<Transpose>(logic)) {
    g.refine(0, RowKind::Batch, 1, RowKind::Batch);
    g.refine(0, RowKind::Input, 1, RowKind::Output);
    g.refine(0, RowKind::Output, 1, RowKind::Input);
  } else if (const auto* slice = std::get_if<BatchSlice>(&logic)) {
    g.pin(g.node(1, RowKind::Batch, 0), ir::AxisIndex::iterator(slice->index.symbol));
    g.equate_rows(1, RowKind::Batch, 0, RowKind::Batch, 1);
    g.equate_rows(1, RowKind::Input, 0, RowKind::Input);
    g.equate_rows(1, RowKind::Output, 0, RowKind::Output);
  } else if (rec.spec) {
    auto slot = [&](std::size_t t, const SlotSpec& s) {
      match_einsum_row(g, t, RowKind::Batch, s.batch);
      match_einsum_row(g, t, RowKind::Input, s.input);
      match_einsum_row(g, t, RowKind::Output, s.output);
    };
    slot(0, rec.spec->lhs);
    for (std::size_t i = 0; i < rec.spec->rhs.size(); ++i) slot(i + 1, rec.spec->rhs[i]);
  }
}

std::vector<std::int64_t> memory_dims(const Shape& s) {
  std::vector<std::int64_t> out;
  for (RowKind k : kMemoryOrder)
    for (const auto& d : subst(s.row(k)).dims) out.push_back(d.size);
  return out;
}

}  // namespace

ir::Projections derive_projections(const StepRecord& rec) {
  std::vector<const Shape*> tensors{rec.step.result.get()};
  for (const auto& o : rec.step.operands) tensors.push_back(o.get());
  AxisGraph g(tensors);
  relate(g, rec);

  // Pins apply to the whole class; two different pins in one class conflict.
  std::map<std::size_t, ir::AxisIndex> class_index;
  for (std::size_t n = 0; n < g.num_tensor_nodes(); ++n) {
    const auto& pin = g.pinned(n);
    if (!pin) continue;
    auto [it, fresh] = class_index.emplace(g.find(n), *pin);
    if (!fresh && !(it->second == *pin))
      throw ShapeError("Conflicting indices for the same axis/projection in operation '" +
                       rec.step.op_name + "'");
  }
  ir::Projections p;
  for (std::size_t n = 0; n < g.num_tensor_nodes(); ++n) {
    const std::size_t root = g.find(n);
    if (class_index.count(root)) continue;
    if (g.size(n) <= 1) {
      class_index.emplace(root, ir::AxisIndex::fixed(0));
      continue;
    }
    const ir::Symbol s = ir::fresh_symbol();
    class_index.emplace(root, ir::AxisIndex::iterator(s));
    p.product_space.push_back(g.size(n));
    p.product_iterators.push_back(s);
  }
  p.lhs_dims = memory_dims(*tensors[0]);
  for (std::size_t n = 0; n < g.tensor_end(0); ++n) p.project_lhs.push_back(class_index.at(g.find(n)));
  for (std::size_t t = 1; t < tensors.size(); ++t) {
    p.rhs_dims.push_back(memory_dims(*tensors[t]));
    p.project_rhs.emplace_back();
    for (std::size_t n = g.tensor_end(t - 1); n < g.tensor_end(t); ++n)
      p.project_rhs.back().push_back(class_index.at(g.find(n)));
  }
  p.debug = rec.spec ? rec.spec->text : rec.step.op_name;
  return p;
}

}  // namespace cannl::shape
