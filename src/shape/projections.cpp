// derive_projections (semantics-frontend.md 4.2): over the closed shapes of one step, union-find
// over the axes the step equates; a size-1 operand axis against a longer result axis is read at
// Fixed 0 (broadcast); every class of size > 1 without a pinned index gets one fresh iterator,
// in first-occurrence order over LHS then RHS axes (memory order batch, output, input).
// Reductions are emergent: iterators absent from project_lhs.

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "cannl/support/checked.h"
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
    offsets_.resize(sizes_.size(), 0);
  }

  std::size_t node(std::size_t tensor, RowKind kind, std::size_t i) const { return row_start_[tensor].at(kind) + i; }
  std::size_t row_len(std::size_t tensor, RowKind kind) const { return row_len_[tensor].at(kind); }
  std::int64_t size(std::size_t n) const { return sizes_[n]; }

  std::size_t virtual_node(const std::string& key, std::int64_t size = -1) {
    auto [it, fresh] = virtual_.emplace(key, parent_.size());
    if (fresh) {
      parent_.push_back(parent_.size());
      sizes_.push_back(size);
      pins_.emplace_back();
      offsets_.push_back(0);
    }
    return it->second;
  }
  void set_size(std::size_t n, std::int64_t size) { sizes_[n] = size; }
  void set_offset(std::size_t n, std::int64_t offset) { offsets_[n] = offset; }
  std::int64_t offset(std::size_t n) const { return offsets_[n]; }
  std::size_t num_nodes() const { return parent_.size(); }
  /// Which tensor (0 = result) a tensor node belongs to.
  std::size_t tensor_of(std::size_t n) const {
    std::size_t t = 0;
    while (n >= tensor_end_[t]) ++t;
    return t;
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
  std::vector<std::int64_t> offsets_;
  std::map<std::string, std::size_t> virtual_;
  std::size_t num_tensor_nodes_ = 0;
};

/// Which concatenation parts are active in one block: label parts by name, integer parts by
/// their position in the spec. Outside concatenation specs nothing is inactive.
struct BlockChoice {
  std::set<std::string> inactive_labels;
  std::set<int> active_ints;
};

/// A convolution / strided axis, resolved once the iterators are known.
struct AffineUse {
  std::size_t node, over, kernel;
  const AxisSpec* spec;
};

struct EinsumCtx {
  const StepRecord& rec;
  const BlockChoice& choice;
  std::vector<AffineUse> affine;
  std::int64_t label_size(const std::string& label) const {
    auto it = rec.label_vars.find(label);
    if (it == rec.label_vars.end()) return -1;
    const Dim d = subst(Dim::variable(it->second));
    return d.is_var() ? -1 : d.size;
  }
  std::size_t label_node(AxisGraph& g, const std::string& label) const {
    return g.virtual_node("label:" + label, label_size(label));
  }
};

/// Links the axes of one slot row to the spec's labels; false when the row is not live in the
/// block (it mentions an inactive concatenation part).
bool match_einsum_row(AxisGraph& g, std::size_t t, RowKind kind, const RowSpec& rs, EinsumCtx& ctx) {
  const std::size_t len = g.row_len(t, kind), nb = rs.beg.size(), nd = rs.dims.size();
  internal_check(len >= nb + nd && (rs.has_ellipsis || len == nb + nd),
                 "projection: einsum row does not match its closed shape");
  const auto& off = ctx.choice.inactive_labels;
  auto label = [&](const AxisSpec& a, std::size_t i) {
    const std::size_t n = g.node(t, kind, i);
    switch (a.kind) {
      case AxisSpec::Kind::Fixed: g.pin(n, ir::AxisIndex::fixed(a.index)); return true;
      case AxisSpec::Kind::Label:
        if (off.count(a.label)) return false;
        g.unite(n, ctx.label_node(g, a.label));
        return true;
      case AxisSpec::Kind::Affine:
        ctx.affine.push_back({n, ctx.label_node(g, a.label),
                              a.kernel.empty() ? n : ctx.label_node(g, a.kernel), &a});
        return true;
      case AxisSpec::Kind::Concat: break;
    }
    std::int64_t offset = 0;
    int live = 0;
    for (const auto& p : a.parts) {
      const bool active = p.label.empty() ? ctx.choice.active_ints.count(p.pos) > 0 : !off.count(p.label);
      const std::int64_t size = p.label.empty() ? p.size : ctx.label_size(p.label);
      if (active && live++ == 0) {
        const std::size_t v = p.label.empty() ? g.virtual_node("int:" + std::to_string(p.pos), p.size)
                                              : ctx.label_node(g, p.label);
        g.set_size(n, size);
        g.set_offset(n, offset);
        g.unite(n, v);
      } else if (!active && live == 0) {
        offset += size;
      }
    }
    return live == 1;
  };
  bool live = true;
  for (std::size_t i = 0; i < nb; ++i) live = label(rs.beg[i], i) && live;
  for (std::size_t i = 0; i < nd; ++i) live = label(rs.dims[i], len - nd + i) && live;
  const std::string key = rs.is_context ? "ctx:" + std::to_string(static_cast<int>(kind)) : "row:" + rs.var_name;
  for (std::size_t i = nb; i < len - nd; ++i)
    g.unite(g.node(t, kind, i), g.virtual_node(key + "#" + std::to_string(i - nb)));
  return live;
}

void relate(AxisGraph& g, const StepRecord& rec, EinsumCtx* ctx, std::vector<bool>* live) {
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
      bool ok = match_einsum_row(g, t, RowKind::Batch, s.batch, *ctx);
      ok = match_einsum_row(g, t, RowKind::Input, s.input, *ctx) && ok;
      ok = match_einsum_row(g, t, RowKind::Output, s.output, *ctx) && ok;
      live->push_back(ok);
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

namespace {

/// `value`, or a ShapeError: an index expression of a strided / convolution axis overflows.
std::int64_t index_or_fail(std::optional<std::int64_t> value, const AxisSpec& a) {
  if (!value)
    throw ShapeError("size overflow: the index of the strided axis '" + a.label + "' (stride " +
                     std::to_string(a.stride) + ", dilation " + std::to_string(a.dilation) +
                     ", offset " + std::to_string(a.offset) + ") exceeds the 64-bit range");
  return *value;
}

ir::AxisIndex scaled_add(ir::AxisIndex acc, const ir::AxisIndex& x, std::int64_t coeff,
                         const AxisSpec& a) {
  for (const auto& t : x.terms) acc.terms.push_back({index_or_fail(checked_mul(t.coeff, coeff), a), t.symbol});
  acc.offset = index_or_fail(checked_mul_add(x.offset, coeff, acc.offset), a);
  return acc;
}

/// Padding of a `use_padding` convolution axis: the kernel window is centred (left = span -
/// (span+1)/2), the right margin is what the last output position reads past the input.
ir::AxisPadding conv_padding(const AxisSpec& a, std::int64_t in, std::int64_t out, std::int64_t k) {
  const std::int64_t span = index_or_fail(checked_mul_add(k - 1, a.dilation, 1), a);
  const std::int64_t left = span - index_or_fail(checked_add(span, 1), a) / 2;
  const std::int64_t reach = index_or_fail(checked_mul_add(a.stride, out - 1, a.offset), a);
  const std::int64_t last = index_or_fail(checked_add(reach, span - 1 - left), a);
  return {left, std::max<std::int64_t>(0, last - (in - 1))};
}

struct BlockResult {
  ir::Projections p;
  std::vector<bool> live;  // result first, then operands
  std::vector<std::vector<ir::AxisPadding>> paddings;  // per operand, memory order
};

class Deriver {
 public:
  Deriver(const StepRecord& rec, const BlockChoice& choice)
      : rec_(rec), tensors_(tensors_of(rec)), g_(tensors_), ctx_{rec, choice, {}} {}

  BlockResult run() {
    BlockResult out;
    relate(g_, rec_, &ctx_, &out.live);
    if (out.live.empty()) out.live.assign(tensors_.size(), true);
    pin_classes();
    for (std::size_t n = 0; n < g_.num_tensor_nodes(); ++n)
      if (out.live[g_.tensor_of(n)] && !affine_nodes_.count(n)) give_iterator(n, g_.size(n));
    for (const auto& a : ctx_.affine)
      for (std::size_t v : {a.over, a.kernel})
        if (v != a.node) give_iterator(v, g_.size(v));
    out.paddings.assign(tensors_.size() - 1, {});
    for (const auto& a : ctx_.affine) resolve_affine(a, out);
    fill(out);
    return out;
  }

 private:
  static std::vector<const Shape*> tensors_of(const StepRecord& rec) {
    std::vector<const Shape*> t{rec.step.result.get()};
    for (const auto& o : rec.step.operands) t.push_back(o.get());
    return t;
  }

  /// Pins apply to the whole class; two different pins in one class conflict.
  void pin_classes() {
    for (const auto& a : ctx_.affine) affine_nodes_.insert(a.node);
    for (std::size_t n = 0; n < g_.num_nodes(); ++n) {
      const auto& pin = g_.pinned(n);
      if (!pin) continue;
      auto [it, fresh] = class_index_.emplace(g_.find(n), *pin);
      if (!fresh && !(it->second == *pin))
        throw ShapeError("Conflicting indices for the same axis/projection in operation '" +
                         rec_.step.op_name + "'");
    }
  }

  void give_iterator(std::size_t n, std::int64_t size) {
    const std::size_t root = g_.find(n);
    if (class_index_.count(root)) return;
    if (size == 1) {
      class_index_.emplace(root, ir::AxisIndex::fixed(0));
      return;
    }
    // An empty axis keeps its loop (of no iteration): a fixed 0 would read a cell it lacks.
    const ir::Symbol s = ir::fresh_symbol();
    class_index_.emplace(root, ir::AxisIndex::iterator(s));
    p_.product_space.push_back(size);
    p_.product_iterators.push_back(s);
  }

  void resolve_affine(const AffineUse& a, BlockResult& out) {
    const AxisSpec& spec = *a.spec;
    ir::AxisIndex at = scaled_add(ir::AxisIndex::fixed(spec.offset), index_of(a.over), spec.stride, spec);
    if (a.kernel != a.node) at = scaled_add(at, index_of(a.kernel), spec.dilation, spec);
    if (spec.use_padding && a.kernel != a.node) {
      const ir::AxisPadding pad = conv_padding(spec, g_.size(a.node), g_.size(a.over), g_.size(a.kernel));
      at.offset -= pad.left;
      const std::size_t t = g_.tensor_of(a.node);
      if (t > 0) {
        auto& pads = out.paddings[t - 1];
        if (pads.empty()) pads.resize(g_.tensor_end(t) - (t == 0 ? 0 : g_.tensor_end(t - 1)));
        auto& slot = pads[a.node - g_.tensor_end(t - 1)];
        slot.left = std::max(slot.left, pad.left);
        slot.right = std::max(slot.right, pad.right);
      }
    }
    affine_index_[a.node] = at;
  }

  ir::AxisIndex index_of(std::size_t n) {
    auto it = class_index_.find(g_.find(n));
    return it == class_index_.end() ? ir::AxisIndex::fixed(0) : it->second;
  }
  ir::AxisIndex node_index(std::size_t n, bool live) {
    if (!live) return ir::AxisIndex::fixed(0);
    if (auto it = affine_index_.find(n); it != affine_index_.end()) return it->second;
    ir::AxisIndex at = index_of(n);
    at.offset += g_.offset(n);
    return at;
  }

  void fill(BlockResult& out) {
    p_.lhs_dims = memory_dims(*tensors_[0]);
    for (std::size_t n = 0; n < g_.tensor_end(0); ++n) p_.project_lhs.push_back(node_index(n, out.live[0]));
    for (std::size_t t = 1; t < tensors_.size(); ++t) {
      p_.rhs_dims.push_back(memory_dims(*tensors_[t]));
      p_.project_rhs.emplace_back();
      for (std::size_t n = g_.tensor_end(t - 1); n < g_.tensor_end(t); ++n)
        p_.project_rhs.back().push_back(node_index(n, out.live[t]));
    }
    p_.debug = rec_.spec ? rec_.spec->text : rec_.step.op_name;
    out.p = std::move(p_);
  }

  const StepRecord& rec_;
  std::vector<const Shape*> tensors_;
  AxisGraph g_;
  EinsumCtx ctx_;
  ir::Projections p_;
  std::map<std::size_t, ir::AxisIndex> class_index_;
  std::set<std::size_t> affine_nodes_;
  std::map<std::size_t, ir::AxisIndex> affine_index_;
};

/// The concatenation groups of a spec: parts linked through concatenated axes. Each block picks
/// one active part per group; returns every combination (capped).
std::vector<BlockChoice> block_choices(const EinsumSpec& spec) {
  std::vector<std::vector<std::string>> groups;  // keys "L:label" / "I:pos"
  std::map<std::string, std::size_t> group_of;
  auto visit = [&](const AxisSpec& a) {
    if (a.kind != AxisSpec::Kind::Concat) return;
    std::optional<std::size_t> target;
    std::vector<std::string> keys;
    for (const auto& p : a.parts) {
      keys.push_back(p.label.empty() ? "I:" + std::to_string(p.pos) : "L:" + p.label);
      if (auto it = group_of.find(keys.back()); it != group_of.end() && !target) target = it->second;
    }
    if (!target) target = groups.size(), groups.emplace_back();
    for (const auto& k : keys) {
      auto it = group_of.find(k);
      if (it != group_of.end() && it->second != *target) {  // merge groups
        const std::size_t old = it->second;
        for (const auto& m : groups[old]) group_of[m] = *target, groups[*target].push_back(m);
        groups[old].clear();
      } else if (it == group_of.end()) {
        group_of[k] = *target;
        groups[*target].push_back(k);
      }
    }
  };
  auto slot = [&](const SlotSpec& s) {
    for (const auto* r : {&s.batch, &s.input, &s.output})
      for (const auto* axes : {&r->beg, &r->dims})
        for (const auto& a : *axes) visit(a);
  };
  slot(spec.lhs);
  for (const auto& s : spec.rhs) slot(s);
  std::vector<BlockChoice> out{BlockChoice{}};
  for (const auto& group : groups) {
    if (group.empty()) continue;
    std::vector<BlockChoice> next;
    for (const auto& base : out)
      for (const auto& pick : group) {
        BlockChoice c = base;
        for (const auto& k : group) {
          const bool chosen = k == pick;
          if (k[0] == 'L' && !chosen) c.inactive_labels.insert(k.substr(2));
          if (k[0] == 'I' && chosen) c.active_ints.insert(std::stoi(k.substr(2)));
        }
        next.push_back(std::move(c));
      }
    out = std::move(next);
    if (out.size() > 4096) throw ShapeError("too many concatenation blocks in einsum spec: " + spec.text);
  }
  return out;
}

}  // namespace

void derive_projections(StepRecord& rec) {
  const bool concat = rec.spec && has_concatenation(rec.spec->text);
  const std::vector<BlockChoice> choices = concat ? block_choices(*rec.spec) : std::vector<BlockChoice>{{}};
  rec.blocks.clear();
  rec.paddings.assign(rec.step.operands.size(), {});
  for (const auto& choice : choices) {
    BlockResult r = Deriver(rec, choice).run();
    const bool reads = std::find(r.live.begin() + 1, r.live.end(), true) != r.live.end();
    if (concat && (!r.live[0] || (!reads && r.live.size() > 1))) continue;
    for (std::size_t i = 0; i < r.paddings.size(); ++i)
      merge_padding(rec.paddings[i], r.paddings[i]);
    rec.blocks.push_back({std::move(r.p), std::vector<bool>(r.live.begin() + 1, r.live.end())});
  }
  if (rec.blocks.empty()) {  // nothing is written: an empty product space
    BlockResult r = Deriver(rec, choices[0]).run();
    r.p.product_space.assign(1, 0);
    r.p.product_iterators.assign(1, ir::fresh_symbol());
    rec.blocks.push_back({std::move(r.p), std::vector<bool>(r.live.begin() + 1, r.live.end())});
  }
  rec.projections = rec.blocks[0].projections;
}

void merge_padding(std::vector<ir::AxisPadding>& into, const std::vector<ir::AxisPadding>& from) {
  if (from.empty()) return;
  if (into.empty()) into.resize(from.size());
  for (std::size_t i = 0; i < from.size() && i < into.size(); ++i) {
    into[i].left = std::max(into[i].left, from[i].left);
    into[i].right = std::max(into[i].right, from[i].right);
  }
}

}  // namespace cannl::shape
