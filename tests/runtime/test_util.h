#pragma once
// Hand-built projections and computations for runtime integration tests (the shape-inference
// front end is not involved: each test states its loops explicitly).
//
//   auto p = pointwise_projections({4, 3}, 2);          // c[i,j] = op(a[i,j], b[i,j])
//   ir::Comp comp = single_accum(accum_op(c, Op::Arg2, Op::Add, {of(a), of(b)}, p));

#include <cstdint>
#include <vector>

#include "cannl/ir/assignments.h"

namespace cannl::testing {

/// Every argument and the LHS read at the same index over `dims` (one fresh iterator per axis).
inline ir::Projections pointwise_projections(const std::vector<std::int64_t>& dims, int n_args) {
  ir::Projections p;
  p.product_space = dims;
  p.lhs_dims = dims;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    p.product_iterators.push_back(ir::fresh_symbol());
    p.project_lhs.push_back(ir::AxisIndex::iterator(p.product_iterators.back()));
  }
  for (int a = 0; a < n_args; ++a) {
    p.rhs_dims.push_back(dims);
    p.project_rhs.push_back(p.project_lhs);
  }
  p.debug = "pointwise";
  return p;
}

/// c[m, n] accum= a[m, k] op b[k, n]: product space [m, k, n].
inline ir::Projections matmul_projections(std::int64_t m, std::int64_t k, std::int64_t n) {
  const ir::Symbol i = ir::fresh_symbol(), j = ir::fresh_symbol(), l = ir::fresh_symbol();
  ir::Projections p;
  p.product_space = {m, k, n};
  p.product_iterators = {i, j, l};
  p.lhs_dims = {m, n};
  p.rhs_dims = {{m, k}, {k, n}};
  using ir::AxisIndex;
  p.project_lhs = {AxisIndex::iterator(i), AxisIndex::iterator(l)};
  p.project_rhs = {{AxisIndex::iterator(i), AxisIndex::iterator(j)},
                   {AxisIndex::iterator(j), AxisIndex::iterator(l)}};
  p.debug = "mk,kn->mn";
  return p;
}

/// A computation made of one accumulating assignment.
inline ir::Comp single_accum(ir::AccumOp op) {
  ir::Comp comp;
  comp.body.push_back(ir::make_accum(std::move(op)));
  return comp;
}

/// A computation made of several accumulating assignments, in order.
inline ir::Comp accum_sequence(std::vector<ir::AccumOp> ops) {
  ir::Comp comp;
  for (auto& op : ops) comp.body.push_back(ir::make_accum(std::move(op)));
  return comp;
}

inline ir::Operand of(ir::NodeRef node) { return ir::Operand::of(std::move(node)); }

/// `lhs accum= op(args)` over `projections`, without neutral initialization unless `init`.
inline ir::AccumOp accum_op(ir::NodeRef lhs, ir::Op accum, ir::Op op, std::vector<ir::Operand> args,
                            ir::Projections projections, bool init = false) {
  ir::AccumOp a;
  a.lhs = std::move(lhs);
  a.accum = accum;
  a.initialize_neutral = init;
  a.op = op;
  a.args = std::move(args);
  a.projections = std::move(projections);
  return a;
}

/// `lhs := op(args...)` pointwise over lhs's dims.
inline ir::AccumOp pointwise(ir::NodeRef lhs, ir::Op op, std::vector<ir::Operand> args) {
  const int n = static_cast<int>(args.size());
  auto projections = pointwise_projections(lhs->dims, n);
  return accum_op(std::move(lhs), ir::Op::Arg2, op, std::move(args), std::move(projections));
}

}  // namespace cannl::testing
