// Fused scaled dot-product attention (nn/ops.h). Its forward and backward are written in the loop
// IR (ir::LoopCode) rather than as assignments over a product space: an online softmax carries a
// running maximum and sum along the keys, and the backward's nests recompute the probabilities
// from the saved row max and log-sum (kept apart: see `probability`), so no [s, t] node exists anywhere.
//
// The nests (B: batch and head loops, in the result's axis order):
//   forward   for B, s: m = -inf, l = 0, o[s] = 0
//                        for t (<= s when causal): x = scale q_s.k_t;
//                          if x > m: a = exp(m - x); o[s] *= a; l *= a; m = x
//                          p = exp(x - m); o[s] += p v_t; l += p
//                        o[s] /= l; row_max[s] = m; log_sum[s] = log(l)
//   delta     for B, s: D[s] = dO_s . o_s
//   dq        for B, s: for t: p = exp((scale q_s.k_t - row_max_s) - log_sum_s);
//                          ds = scale p (dO_s.v_t - D_s);
//                          dq[s] += ds k_t
//   dk, dv    for B, t: for s: p, ds as above; dv[t] += p dO_s; dk[t] += ds q_s
// Each nest writes only cells of its outer loops' own row, so those loops are parallel (the GPU
// schedule proves it by the affine accesses) and the sums along the inner loop stay in order.
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "cannl/nn/ops.h"
#include "cannl/support/error.h"
#include "cannl/tensor/op_builder.h"

namespace cannl::nn {
namespace {

using ir::AxisIndex;
using ir::DType;
using ir::NodeRef;
using ir::Op;
using ir::ScalarRef;
using ir::StmtRef;
using ir::Symbol;

/// What a product axis of the einsum is, by the operands that mention it.
enum class Role {
  Unit,      // extent 1: no loop, index 0
  Shared,    // out, q, k, v: batch and heads
  Query,     // out, q: s
  Key,       // k, v: t
  Contract,  // q, k: d
  Value,     // out, v: e
};

/// Product iterator -> loop symbol of the nest being built (nullopt: extent 1, index 0).
using Renaming = std::map<Symbol, std::optional<Symbol>>;
using BodyOf = std::function<StmtRef(const Renaming&)>;

/// The nodes one builder call reads and writes; null gradients are not wanted.
struct Nodes {
  NodeRef q, k, v, out, row_max, log_sum, delta, d_out, dq, dk, dv;
};

class AttentionNests {
 public:
  AttentionNests(const ir::Projections& p, const FusedAttentionOptions& options, DType dt)
      : p_(p), options_(options), dt_(dt) {
    internal_check(p.project_rhs.size() == 3, "fused_attention: three operands");
    for (std::size_t i = 0; i < p.product_space.size(); ++i) roles_.push_back(role_of(i));
    const auto queries = axes_of(Role::Query), keys = axes_of(Role::Key);
    if (options.causal && !(queries.size() == keys.size() && queries.size() <= 1 &&
                            (queries.empty() || extent(queries[0]) == extent(keys[0]))))
      throw ShapeError("fused_attention (causal): the queries and the keys must run along one "
                       "position axis each, of the same length (" + p.debug + ")");
  }

  /// Dims of the per-row statistics (row_max, log_sum, D): the result's dims without its value axes.
  std::vector<std::int64_t> row_dims() const {
    std::vector<std::int64_t> dims;
    for (std::size_t a : row_axes()) dims.push_back(p_.lhs_dims[a]);
    return dims;
  }

  StmtRef forward(const Nodes& n) const {
    return loops(rows(false), unit_renaming(), [&](const Renaming& r) {
      const int m = ir::fresh_scope_id(), l = ir::fresh_scope_id();
      const auto out_at = [&](const Renaming& re) { return index(p_.project_lhs, re); };
      std::vector<StmtRef> body{
          ir::declare_local(m, dt_, false), ir::set_local(m, c(-std::numeric_limits<double>::infinity())),
          ir::declare_local(l, dt_, false), ir::set_local(l, c(0)),
          loops(axes_of(Role::Value), r, [&](const Renaming& re) {
            return ir::set(n.out, out_at(re), c(0), "fused attention: zero the row");
          }),
          loops(axes_of(Role::Key), r, [&](const Renaming& re) {
            // The row is rescaled only when the maximum grows (a few keys per row): one exp and
            // one multiply-add per value cell for every other key.
            const int x = ir::fresh_scope_id(), a = ir::fresh_scope_id(), pr = ir::fresh_scope_id();
            Block step, grow;
            score(step, x, n, re);
            local(grow, a, f(Op::Exp, f(Op::Sub, get_local(m), get_local(x))));
            grow.push_back(loops(axes_of(Role::Value), re, [&](const Renaming& rv) {
              const auto at = out_at(rv);
              return ir::set(n.out, at, f(Op::Mul, ir::get(n.out, at), get_local(a)),
                             "fused attention: rescale the row");
            }));
            grow.push_back(ir::set_local(l, f(Op::Mul, get_local(l), get_local(a))));
            grow.push_back(ir::set_local(m, get_local(x)));
            step.push_back(ir::if_then(f(Op::Cmplt, get_local(m), get_local(x)), ir::seq(std::move(grow))));
            local(step, pr, f(Op::Exp, f(Op::Sub, get_local(x), get_local(m))));
            step.push_back(loops(axes_of(Role::Value), re, [&](const Renaming& rv) {
              const auto at = out_at(rv);
              return ir::set(n.out, at,
                             f(Op::Add, ir::get(n.out, at),
                               f(Op::Mul, get_local(pr), ir::get(n.v, index(p_.project_rhs[2], rv)))),
                             "fused attention: online softmax");
            }));
            step.push_back(ir::set_local(l, f(Op::Add, get_local(l), get_local(pr))));
            return causal_guard(re, ir::seq(std::move(step)));
          }),
          loops(axes_of(Role::Value), r, [&](const Renaming& re) {
            const auto at = out_at(re);
            return ir::set(n.out, at, f(Op::Div, ir::get(n.out, at), get_local(l)),
                           "fused attention: normalize");
          }),
          // The row max apart from log(l): m + log(l) in one f32 would round to an ulp of m (2^-9
          // at scores of 3e4), and every probability the backward recomputes from it with it.
          ir::set(n.row_max, row_index(r), get_local(m), "fused attention: row max"),
          ir::set(n.log_sum, row_index(r), f(Op::Log, get_local(l)), "fused attention: log-sum")};
      return ir::seq(std::move(body));
    });
  }

  /// D[s] = dO_s . o_s
  StmtRef delta(const Nodes& n) const {
    return loops(rows(false), unit_renaming(), [&](const Renaming& r) {
      const int acc = ir::fresh_scope_id();
      Block body;
      dot(body, acc, Role::Value, n.d_out, p_.project_lhs, n.out, p_.project_lhs, r);
      body.push_back(ir::set(n.delta, row_index(r), get_local(acc), "fused attention: D = dO . O"));
      return ir::seq(std::move(body));
    });
  }

  /// A node read or written at a projection of the attention's axes.
  struct Operand {
    const NodeRef& node;
    const std::vector<ir::AxisIndex>& at;
  };

  /// target += local * other over the `role` axes: one row of a gradient's accumulation.
  StmtRef add_product(Role role, const Renaming& re, Operand target, int local, Operand other,
                      const char* label) const {
    return loops(axes_of(role), re, [&](const Renaming& r) {
      const auto at = index(target.at, r);
      return ir::set(target.node, at,
                     f(Op::Add, ir::get(target.node, at), f(Op::Mul, get_local(local), ir::get(other.node, index(other.at, r)))),
                     label);
    });
  }

  /// dq[s] += sum_t ds_st k_t, the query rows outermost.
  StmtRef grad_q(const Nodes& n) const {
    return loops(rows(false), unit_renaming(), [&](const Renaming& r) {
      return loops(axes_of(Role::Key), r, [&](const Renaming& re) {
        const int p = ir::fresh_scope_id(), ds = ir::fresh_scope_id();
        Block body;
        probability(body, p, n, re);
        score_grad(body, ds, p, n, re);
        body.push_back(add_product(Role::Contract, re, {n.dq, p_.project_rhs[0]}, ds, {n.k, p_.project_rhs[1]},
                                   "fused attention: dq"));
        return causal_guard(re, ir::seq(std::move(body)));
      });
    });
  }

  /// dv[t] += sum_s p_st dO_s and dk[t] += sum_s ds_st q_s, the key rows outermost.
  StmtRef grad_kv(const Nodes& n) const {
    return loops(rows(true), unit_renaming(), [&](const Renaming& r) {
      return loops(axes_of(Role::Query), r, [&](const Renaming& re) {
        const int p = ir::fresh_scope_id(), ds = ir::fresh_scope_id();
        Block body;
        probability(body, p, n, re);
        if (n.dv)
          body.push_back(add_product(Role::Value, re, {n.dv, p_.project_rhs[2]}, p, {n.d_out, p_.project_lhs},
                                     "fused attention: dv"));
        if (n.dk) {
          score_grad(body, ds, p, n, re);
          body.push_back(add_product(Role::Contract, re, {n.dk, p_.project_rhs[1]}, ds, {n.q, p_.project_rhs[0]},
                                     "fused attention: dk"));
        }
        return causal_guard(re, ir::seq(std::move(body)));
      });
    });
  }

 private:
  const ir::Projections& p_;
  FusedAttentionOptions options_;
  DType dt_;
  std::vector<Role> roles_;

  std::int64_t extent(std::size_t axis) const { return p_.product_space[axis]; }
  Symbol iterator(std::size_t axis) const { return p_.product_iterators[axis]; }

  Role role_of(std::size_t axis) const {
    if (extent(axis) == 1) return Role::Unit;
    const Symbol s = iterator(axis);
    const bool o = ir::mentions(p_.project_lhs, s), q = ir::mentions(p_.project_rhs[0], s),
               k = ir::mentions(p_.project_rhs[1], s), v = ir::mentions(p_.project_rhs[2], s);
    if (o && q && k && v) return Role::Shared;
    if (o && q && !k && !v) return Role::Query;
    if (!o && !q && k && v) return Role::Key;
    if (!o && q && k && !v) return Role::Contract;
    if (o && !q && !k && v) return Role::Value;
    throw InternalError("fused_attention: a product axis is read by an unexpected set of operands (" +
                        p_.debug + ")");
  }

  std::vector<std::size_t> axes_of(Role role) const {
    std::vector<std::size_t> axes;
    for (std::size_t i = 0; i < roles_.size(); ++i)
      if (roles_[i] == role) axes.push_back(i);
    return axes;
  }
  std::optional<std::size_t> axis_of(Symbol s) const {
    for (std::size_t i = 0; i < roles_.size(); ++i)
      if (iterator(i) == s) return i;
    return std::nullopt;
  }

  /// The result's axes that hold no value axis: those of row_max, log_sum and D.
  std::vector<std::size_t> row_axes() const {
    std::vector<std::size_t> kept;
    for (std::size_t a = 0; a < p_.project_lhs.size(); ++a) {
      bool value = false;
      for (const auto& t : p_.project_lhs[a].terms)
        if (const auto i = axis_of(t.symbol)) value = value || roles_[*i] == Role::Value;
      if (!value) kept.push_back(a);
    }
    return kept;
  }

  /// The outer loops of a nest: the batch, head and query axes in the result's order, or with
  /// `by_key` the key axes where the query axes stood.
  std::vector<std::size_t> rows(bool by_key) const {
    std::vector<std::size_t> order;
    bool keys_placed = false;
    for (const auto& axis : p_.project_lhs)
      for (const auto& t : axis.terms) {
        const auto i = axis_of(t.symbol);
        if (!i) continue;
        if (roles_[*i] == Role::Shared) order.push_back(*i);
        if (roles_[*i] != Role::Query) continue;
        if (!by_key) {
          order.push_back(*i);
        } else if (!keys_placed) {
          for (std::size_t k : axes_of(Role::Key)) order.push_back(k);
          keys_placed = true;
        }
      }
    if (by_key && !keys_placed)
      for (std::size_t k : axes_of(Role::Key)) order.push_back(k);
    return order;
  }

  Renaming unit_renaming() const {
    Renaming r;
    for (std::size_t i = 0; i < roles_.size(); ++i)
      if (roles_[i] == Role::Unit) r[iterator(i)] = std::nullopt;
    return r;
  }

  /// Loops with fresh symbols over `axes` (outermost first) around `body` of the extended renaming.
  StmtRef loops(const std::vector<std::size_t>& axes, Renaming r, const BodyOf& body) const {
    std::vector<std::pair<Symbol, std::int64_t>> made;
    for (std::size_t a : axes) {
      const Symbol s = ir::fresh_symbol();
      r[iterator(a)] = s;
      made.emplace_back(s, extent(a));
    }
    StmtRef stmt = body(r);
    for (auto it = made.rbegin(); it != made.rend(); ++it) stmt = ir::for_loop(it->first, 0, it->second, stmt);
    return stmt;
  }

  std::vector<AxisIndex> index(const std::vector<AxisIndex>& projection, const Renaming& r) const {
    std::vector<AxisIndex> out;
    for (const auto& axis : projection) {
      AxisIndex at{{}, axis.offset};
      for (const auto& t : axis.terms) {
        const auto it = r.find(t.symbol);
        if (it == r.end()) {
          at.terms.push_back(t);  // a static symbol
        } else if (it->second) {
          at.terms.push_back({t.coeff, *it->second});
        } else if (!axis_of(t.symbol) || roles_[*axis_of(t.symbol)] != Role::Unit) {
          throw InternalError("fused_attention: an index names a loop outside its nest");
        }
      }
      out.push_back(std::move(at));
    }
    return out;
  }
  std::vector<AxisIndex> row_index(const Renaming& r) const {
    const auto full = index(p_.project_lhs, r);
    std::vector<AxisIndex> out;
    for (std::size_t a : row_axes()) out.push_back(full[a]);
    return out;
  }

  ScalarRef c(double value) const { return ir::constant(value, dt_); }
  ScalarRef get_local(int id) const { return ir::get_local(id, dt_); }
  ScalarRef f(Op op, ScalarRef a) const { return ir::apply(op, dt_, {std::move(a)}); }
  ScalarRef f(Op op, ScalarRef a, ScalarRef b) const { return ir::apply(op, dt_, {std::move(a), std::move(b)}); }
  // The helpers below append to the statements of one block: a local is visible in the rest of
  // the block that declares it.
  using Block = std::vector<StmtRef>;

  void local(Block& out, int id, ScalarRef value) const {
    out.push_back(ir::declare_local(id, dt_, false));
    out.push_back(ir::set_local(id, std::move(value)));
  }
  /// Local `id` := sum over the `role` axes of a[..] * b[..]. Over one axis whose extent a lane
  /// count divides, the sum runs in that many interleaved chains (lane u takes the steps
  /// u, u + lanes, ...) added pairwise at the end: a fixed order every backend computes, whose
  /// chains do not wait on each other (one chain of fused multiply-adds is the nests' bottleneck).
  void dot(Block& out, int id, Role role, const NodeRef& a, const std::vector<AxisIndex>& a_at,
           const NodeRef& b, const std::vector<AxisIndex>& b_at, const Renaming& r) const {
    const auto axes = axes_of(role);
    const std::int64_t lanes = axes.size() == 1 ? dot_lanes(extent(axes[0])) : 1;
    if (lanes == 1) {
      local(out, id, c(0));
      out.push_back(loops(axes, r, [&](const Renaming& rd) {
        return ir::set_local(id, f(Op::Add, get_local(id),
                                   f(Op::Mul, ir::get(a, index(a_at, rd)), ir::get(b, index(b_at, rd)))));
      }));
      return;
    }
    std::vector<int> chains;
    for (std::int64_t u = 0; u < lanes; ++u) {
      chains.push_back(ir::fresh_scope_id());
      local(out, chains.back(), c(0));
    }
    const Symbol step = ir::fresh_symbol();
    Renaming rd = r;
    rd[iterator(axes[0])] = step;
    Block updates;
    for (std::int64_t u = 0; u < lanes; ++u) {
      const auto at = [&](const std::vector<AxisIndex>& projection) {
        return lane_index(index(projection, rd), step, lanes, u);
      };
      updates.push_back(ir::set_local(chains[static_cast<std::size_t>(u)],
                                      f(Op::Add, get_local(chains[static_cast<std::size_t>(u)]),
                                        f(Op::Mul, ir::get(a, at(a_at)), ir::get(b, at(b_at))))));
    }
    out.push_back(ir::for_loop(step, 0, extent(axes[0]) / lanes, ir::seq(std::move(updates))));
    std::vector<ScalarRef> sums;
    for (int chain : chains) sums.push_back(get_local(chain));
    while (sums.size() > 1) {
      std::vector<ScalarRef> pairs;
      for (std::size_t i = 0; i + 1 < sums.size(); i += 2) pairs.push_back(f(Op::Add, sums[i], sums[i + 1]));
      sums = std::move(pairs);
    }
    local(out, id, sums[0]);
  }
  static std::int64_t dot_lanes(std::int64_t extent) {
    for (std::int64_t lanes : {8, 4, 2})
      if (extent % lanes == 0 && extent >= 2 * lanes) return lanes;
    return 1;
  }
  /// `index` with the step symbol s replaced by lanes * s + u.
  static std::vector<AxisIndex> lane_index(std::vector<AxisIndex> index, Symbol s, std::int64_t lanes,
                                           std::int64_t u) {
    for (auto& axis : index)
      for (auto& t : axis.terms)
        if (t.symbol == s) {
          axis.offset += t.coeff * u;
          t.coeff *= lanes;
        }
    return index;
  }
  /// Local `id` := scale q_s . k_t.
  void score(Block& out, int id, const Nodes& n, const Renaming& r) const {
    dot(out, id, Role::Contract, n.q, p_.project_rhs[0], n.k, p_.project_rhs[1], r);
    out.push_back(ir::set_local(id, f(Op::Mul, get_local(id), c(options_.scale))));
  }
  /// Local `id` := exp((scale q_s . k_t - row_max_s) - log_sum_s). The score is the forward's to
  /// the bit (the same dot product), so x - row_max is small and exact where the scores are large.
  void probability(Block& out, int id, const Nodes& n, const Renaming& r) const {
    const int x = ir::fresh_scope_id();
    score(out, x, n, r);
    const auto at = row_index(r);
    local(out, id, f(Op::Exp, f(Op::Sub, f(Op::Sub, get_local(x), ir::get(n.row_max, at)), ir::get(n.log_sum, at))));
  }
  /// Local `id` := scale p (dO_s . v_t - D_s), for the probability in local `p`.
  void score_grad(Block& out, int id, int p, const Nodes& n, const Renaming& r) const {
    const int dp = ir::fresh_scope_id();
    dot(out, dp, Role::Value, n.d_out, p_.project_lhs, n.v, p_.project_rhs[2], r);
    local(out, id, f(Op::Mul, c(options_.scale),
                     f(Op::Mul, get_local(p), f(Op::Sub, get_local(dp), ir::get(n.delta, row_index(r))))));
  }

  /// `body` only where t <= s (causal), else `body`.
  StmtRef causal_guard(const Renaming& r, StmtRef body) const {
    const auto queries = axes_of(Role::Query), keys = axes_of(Role::Key);
    if (!options_.causal || queries.empty()) return body;
    const AxisIndex key_minus_query{{{1, *r.at(iterator(keys[0]))}, {-1, *r.at(iterator(queries[0]))}}, 0};
    return ir::if_then(ir::apply(Op::Cmplt, DType::I64,
                                 {ir::embed_index(key_minus_query), ir::constant(1, DType::I64)}),
                       std::move(body));
  }
};

/// The per-row statistics nodes, made on first use and reused by every later build of the op's
/// code (a recompile then names the same nodes).
struct RowNodes {
  NodeRef row_max, log_sum, delta;
};

NodeRef row_node(NodeRef& slot, const std::string& label, DType dt, const std::vector<std::int64_t>& dims) {
  if (!slot) slot = ir::make_node(label, dt, dims);
  internal_check(slot->dims == dims, [&] { return "fused_attention: the statistics " + label + " changed shape"; });
  return slot;
}

}  // namespace

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                       const FusedAttentionOptions& options) {
  auto rows = std::make_shared<RowNodes>();
  detail::OpSpec spec;
  spec.label = "fused_attention";
  spec.args = {q, k, v};
  spec.logic = shape::Einsum{"... s | -> h d; ... t | -> h d; ... t | -> h e => ... s | -> h e"};
  spec.forward = [options, rows](const Tensor& self, const ir::Projections& p) {
    const DType dt = ir::compute_dtype(self.value()->dtype);
    const AttentionNests nests(p, options, dt);
    Nodes n;
    n.q = self.args()[0].value();
    n.k = self.args()[1].value();
    n.v = self.args()[2].value();
    n.out = self.value();
    n.row_max = row_node(rows->row_max, self.label() + "_row_max", dt, nests.row_dims());
    n.log_sum = row_node(rows->log_sum, self.label() + "_log_sum", dt, nests.row_dims());
    return std::vector<ir::AsgnRef>{ir::make_loop_code(
        {"fused_attention", {n.q, n.k, n.v}, {n.out, n.row_max, n.log_sum}, nests.forward(n)})};
  };
  spec.backward = [options, rows](const Tensor& self, const ir::Projections& p) {
    const DType dt = ir::compute_dtype(self.value()->dtype);
    const AttentionNests nests(p, options, dt);
    internal_check(rows->row_max != nullptr, "fused_attention: backward built before the forward");
    Nodes n;
    n.q = self.args()[0].value();
    n.k = self.args()[1].value();
    n.v = self.args()[2].value();
    n.out = self.value();
    n.row_max = rows->row_max;
    n.log_sum = rows->log_sum;
    n.delta = row_node(rows->delta, self.label() + "_delta", dt, nests.row_dims());
    n.d_out = self.grad();
    n.dq = self.args()[0].grad();
    n.dk = self.args()[1].grad();
    n.dv = self.args()[2].grad();
    std::vector<ir::AsgnRef> code;
    // D feeds the score gradient of dq and dk; dv alone needs only the probabilities.
    std::vector<NodeRef> common{n.q, n.k, n.v, n.d_out, n.row_max, n.log_sum};
    if (n.dq || n.dk) {
      common.push_back(n.delta);
      code.push_back(ir::make_loop_code(
          {"fused_attention_delta", {n.d_out, n.out}, {n.delta}, nests.delta(n)}));
    }
    if (n.dq) {
      auto reads = common;
      reads.push_back(n.dq);
      code.push_back(ir::make_loop_code({"fused_attention_dq", reads, {n.dq}, nests.grad_q(n)}));
    }
    if (n.dk || n.dv) {
      auto reads = common;
      std::vector<NodeRef> writes;
      for (const auto& g : {n.dk, n.dv})
        if (g) {
          reads.push_back(g);
          writes.push_back(g);
        }
      code.push_back(ir::make_loop_code({"fused_attention_dkv", reads, writes, nests.grad_kv(n)}));
    }
    return code;
  };
  return detail::make_op(std::move(spec));
}

}  // namespace cannl::nn
