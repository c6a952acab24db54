// Forward and backward code of a tensor graph (semantics-frontend.md 6).
//
// The forward code of a graph is every op's forward assignments in topological order. Backprop
// visits the same order reversed, so each tensor's gradient is complete (all its consumers have
// contributed) before it is propagated to its arguments; contributions accumulate (`=+`), and every
// gradient is zeroed by the step's own code first.
#include "cannl/tensor/autodiff.h"

#include <functional>
#include <map>
#include <set>

#include "cannl/tensor/op_builder.h"

namespace cannl {
namespace {

void collect_statics(const std::vector<Tensor>& order, ir::Comp& comp) {
  std::set<int> seen;
  for (const auto& t : order)
    if (t.impl().static_index && seen.insert(t.impl().static_index->symbol.id).second)
      comp.statics.push_back(*t.impl().static_index);
}

void append(std::vector<ir::AsgnRef>& to, std::vector<ir::AsgnRef> code) {
  for (auto& a : code) to.push_back(std::move(a));
}

std::vector<ir::AsgnRef> forward_body(const std::vector<Tensor>& order) {
  std::vector<ir::AsgnRef> body;
  for (const auto& t : order)
    if (t.impl().forward) append(body, t.impl().forward(t, detail::step_projections(t)));
  return body;
}

}  // namespace

ir::Projections identity_projections(const std::vector<std::int64_t>& dims, int n_args) {
  ir::Projections p;
  p.lhs_dims = dims;
  for (auto d : dims) {
    const ir::Symbol s = ir::fresh_symbol();
    p.product_space.push_back(d);
    p.product_iterators.push_back(s);
    p.project_lhs.push_back(ir::AxisIndex::iterator(s));
  }
  for (int i = 0; i < n_args; ++i) {
    p.rhs_dims.push_back(dims);
    p.project_rhs.push_back(p.project_lhs);
  }
  p.debug = "pointwise";
  return p;
}

std::vector<Tensor> topological_order(const std::vector<Tensor>& roots) {
  std::vector<Tensor> order;
  std::set<int> visited;
  std::function<void(const Tensor&)> visit = [&](const Tensor& t) {
    if (!visited.insert(t.id()).second) return;
    for (const auto& a : t.args()) visit(a);
    order.push_back(t);
  };
  for (const auto& r : roots) visit(r);
  return order;
}

std::vector<Tensor> params_of(const std::vector<Tensor>& roots) {
  std::vector<Tensor> params;
  for (const auto& t : topological_order(roots))
    if (t.is_param()) params.push_back(t);
  return params;
}

std::vector<Tensor> literals_of(const std::vector<Tensor>& roots) {
  std::vector<Tensor> literals;
  for (const auto& t : topological_order(roots))
    if (t.impl().host_values) literals.push_back(t);
  return literals;
}

void resolve_shapes(const std::vector<Tensor>& roots) {
  shape::finish_inference();
  for (const auto& t : topological_order(roots)) {
    detail::check_current(t);  // also when resolved: its code would read another tensor's step
    if (!t.value()->dims.empty()) continue;  // already resolved by an earlier compile
    auto dims = shape::dims(*t.shape());
    // Padding (max over the padded convolutions reading t): buffers include the margins.
    const auto pad = shape::padding(*t.shape());
    if (pad.size() == dims.size())
      for (std::size_t i = 0; i < dims.size(); ++i) dims[i] += pad[i].left + pad[i].right;
    for (const auto& node : {t.value(), t.grad()}) {
      if (!node) continue;
      node->dims = dims;
      if (pad.size() == dims.size()) node->padding = pad;
    }
  }
}

namespace {
/// Roots are what the caller reads back: they must stay in the context (provenance 60).
void materialize_roots(const std::vector<Tensor>& roots) {
  for (const auto& r : roots) ir::update_memory_mode(*r.value(), ir::MemoryMode::Materialized, 60);
}
}  // namespace

ir::Comp forward_code(const std::vector<Tensor>& roots) {
  resolve_shapes(roots);
  materialize_roots(roots);
  const auto order = topological_order(roots);
  ir::Comp comp;
  comp.body.push_back(ir::make_block("forward", forward_body(order)));
  collect_statics(order, comp);
  return comp;
}

namespace {

/// Number of gradient assignments writing each node (loop code counts once per node it writes:
/// it accumulates onto the zeroed gradient, so another contribution must not overwrite it).
std::map<int, int> contributions(const std::vector<ir::AsgnRef>& backprop) {
  std::map<int, int> count;
  for (const auto& a : backprop) {
    if (const auto* op = std::get_if<ir::AccumOp>(&a->node)) ++count[op->lhs->id];
    if (const auto* code = std::get_if<ir::LoopCode>(&a->node))
      for (const auto& n : code->writes) ++count[n->id];
  }
  return count;
}

/// A gradient with exactly one `+=` contribution is written by it directly (`=:+`, which lowers
/// to a plain store when it covers every cell) instead of being zeroed and accumulated: fewer
/// passes over memory, and a single-setter node the optimizer can inline.
std::vector<ir::AsgnRef> write_single_contributions(std::vector<ir::AsgnRef> backprop,
                                                    std::set<int>& written_directly) {
  const auto count = contributions(backprop);
  for (auto& a : backprop) {
    const auto* op = std::get_if<ir::AccumOp>(&a->node);
    if (op == nullptr || op->accum != ir::Op::Add || count.at(op->lhs->id) != 1) continue;
    ir::AccumOp direct = *op;
    direct.initialize_neutral = true;
    written_directly.insert(op->lhs->id);
    a = ir::make_accum(std::move(direct));
  }
  return backprop;
}

}  // namespace

ir::Comp grad_update_code(const Tensor& loss) {
  resolve_shapes({loss});
  materialize_roots({loss});
  const auto order = topological_order({loss});
  ir::Comp comp;
  comp.body.push_back(ir::make_block("forward", forward_body(order)));
  std::vector<ir::AsgnRef> backprop;
  if (loss.grad()) backprop.push_back(ir::make_fetch(loss.grad(), ir::FetchConstant{1}));
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (it->grad() && it->impl().backward)
      append(backprop, it->impl().backward(*it, detail::step_projections(*it)));
  std::set<int> written_directly;
  backprop = write_single_contributions(std::move(backprop), written_directly);
  std::vector<ir::AsgnRef> zero;
  for (const auto& t : order)
    if (t.grad() && t.grad() != loss.grad() && written_directly.count(t.grad()->id) == 0)
      zero.push_back(ir::make_fetch(t.grad(), ir::FetchConstant{0}));
  comp.body.push_back(ir::make_block("zero gradients", std::move(zero)));
  comp.body.push_back(ir::make_block("backprop", std::move(backprop)));
  collect_statics(order, comp);
  return comp;
}

}  // namespace cannl
