// Splits the pending inference into independent parts (see components.h) by a union-find over
// variables, shapes, steps and constraints.

#include "shape/components.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace cannl::shape {
namespace {

enum class Node : char { Variable, Shape, Step, Constraint };

class Linker {
 public:
  int node(Node kind, std::int64_t id) {
    auto [it, fresh] = index_.try_emplace({kind, id}, static_cast<int>(parent_.size()));
    if (fresh) parent_.push_back(it->second);
    return it->second;
  }
  int root(int n) {
    while (parent_[static_cast<std::size_t>(n)] != n) {
      auto& p = parent_[static_cast<std::size_t>(n)];
      p = parent_[static_cast<std::size_t>(p)];  // path halving
      n = p;
    }
    return n;
  }
  void join(int a, int b) { parent_[static_cast<std::size_t>(root(a))] = root(b); }
  void join_dim(int n, const Dim& d) {
    if (d.is_var()) join(n, node(Node::Variable, d.var));
  }
  void join_row(int n, const Row& r) {
    for (const auto& d : r.beg) join_dim(n, d);
    for (const auto& d : r.dims) join_dim(n, d);
    if (r.is_open()) join(n, node(Node::Variable, r.var));
  }
  void join_shape(int n, const Shape& sh) {
    const int s = node(Node::Shape, sh.id);
    join(n, s);
    for (const Row* r : {&sh.batch, &sh.input, &sh.output}) join_row(s, *r);
  }

 private:
  std::map<std::pair<Node, std::int64_t>, int> index_;
  std::vector<int> parent_;
};

void join_constraint(Linker& l, std::uint64_t seq, const Constraint& k) {
  const int n = l.node(Node::Constraint, static_cast<std::int64_t>(seq));
  for (const Dim* d : {&k.d1, &k.d2, &k.d3}) l.join_dim(n, *d);
  for (const auto& d : k.parts) l.join_dim(n, d);
  for (const Row* r : {&k.r1, &k.r2}) l.join_row(n, *r);
  for (const auto& r : k.rows) l.join_row(n, r);
  for (int v : k.watch) l.join(n, l.node(Node::Variable, v));
  if (!k.origin) return;
  if (k.origin->step_id >= 0) l.join(n, l.node(Node::Step, k.origin->step_id));
  for (const auto& sh : k.origin->shapes)
    if (sh) l.join_shape(n, *sh);
}

void join_step(Linker& l, std::size_t index, const StepRecord& rec) {
  const int n = l.node(Node::Step, static_cast<std::int64_t>(index));
  if (rec.step.result) l.join_shape(n, *rec.step.result);
  for (const auto& o : rec.step.operands) l.join_shape(n, *o);
  for (const auto& [label, var] : rec.label_vars) l.join(n, l.node(Node::Variable, var));
  for (const auto& c : rec.captures)
    if (c.var >= 0) l.join(n, l.node(Node::Variable, c.var));
}

/// Every node of the current state, linked: bound variables to what they are bound to.
Linker link_pending() {
  const auto& s = state();
  Linker l;
  for (const auto& [var, d] : s.dim_solution) l.join_dim(l.node(Node::Variable, var), d);
  for (const auto& [var, r] : s.row_solution) l.join_row(l.node(Node::Variable, var), r);
  for (const auto& [seq, k] : s.pending) join_constraint(l, seq, *k);
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock()) l.join_shape(l.node(Node::Shape, sh->id), *sh);
  for (std::size_t i = 0; i < s.steps.size(); ++i)
    if (s.steps[i].pending) join_step(l, i, s.steps[i]);
  return l;
}

}  // namespace

std::vector<InferenceComponent> pending_components() {
  const auto& s = state();
  Linker l = link_pending();
  std::map<int, InferenceComponent> by_root;
  for (std::size_t i = 0; i < s.steps.size(); ++i)
    if (s.steps[i].pending) by_root[l.root(l.node(Node::Step, static_cast<std::int64_t>(i)))].steps.push_back(i);
  for (const auto& [seq, k] : s.pending)
    by_root[l.root(l.node(Node::Constraint, static_cast<std::int64_t>(seq)))].constraints.push_back(seq);
  for (const auto& weak : s.pending_shapes)
    if (auto sh = weak.lock()) by_root[l.root(l.node(Node::Shape, sh->id))].shapes.push_back(weak);
  std::vector<InferenceComponent> parts;
  for (auto& [root, part] : by_root) parts.push_back(std::move(part));
  auto first_step = [](const InferenceComponent& c) {
    return c.steps.empty() ? std::numeric_limits<std::size_t>::max() : c.steps.front();
  };
  std::stable_sort(parts.begin(), parts.end(),
                   [&](const auto& a, const auto& b) { return first_step(a) < first_step(b); });
  return parts;
}

}  // namespace cannl::shape
