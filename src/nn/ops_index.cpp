// gather_at and write_at (include/cannl/nn/ops.h): reading and writing one row of a tensor at a
// run-time index, the pieces of generation with a key-value cache (the token's embedding row, the
// new position's keys and values). Both are assignments whose projections name the static symbol
// where the einsum would name a loop, so the generated code touches that row only.
#include <algorithm>

#include "cannl/nn/ops.h"
#include "cannl/support/error.h"
#include "cannl/tensor/op_builder.h"

namespace cannl::nn {
namespace {

using ir::Op;

/// `p` without the product iterator `s`: the rewritten assignment does not loop over that axis.
ir::Projections without_iterator(ir::Projections p, ir::Symbol s) {
  for (std::size_t k = 0; k < p.product_iterators.size(); ++k)
    if (p.product_iterators[k] == s) {
      p.product_iterators.erase(p.product_iterators.begin() + static_cast<std::ptrdiff_t>(k));
      p.product_space.erase(p.product_space.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
  return p;
}

ir::AxisIndex at_static(const ir::StaticSymbol& index) { return ir::AxisIndex::iterator(index.symbol); }

ir::AsgnRef assign(const ir::NodeRef& lhs, const ir::NodeRef& source, ir::Projections p,
                   bool initialize) {
  ir::AccumOp a;
  a.lhs = lhs;
  a.accum = Op::Arg2;
  a.initialize_neutral = initialize;
  a.op = Op::Identity;
  a.args = {ir::Operand::of(source)};
  a.projections = std::move(p);
  return ir::make_accum(std::move(a));
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

Tensor gather_at(const Tensor& table, const ir::StaticSymbol& index) {
  detail::OpSpec spec;
  spec.label = "gather_" + table.label();
  spec.args = {table};
  // The shape of a sum over the input axis; the code reads the one row instead of summing.
  spec.logic = shape::Einsum{"... | v -> ... => ... | -> ..."};
  spec.forward = [index](const Tensor& self, const ir::Projections& p) {
    const auto& rows = p.project_rhs.at(0);
    std::optional<std::size_t> axis;
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (rows[k].is_iterator() && !mentions(p.project_lhs, rows[k].terms[0].symbol)) axis = k;
    internal_check(axis.has_value(), [&] { return "gather_at: no reduced axis in " + p.debug; });
    const std::int64_t extent = p.rhs_dims.at(0).at(*axis);
    // The run checks the index against its range, so a range within the rows keeps every read
    // in bounds (a position index over a cache window shorter than the table of positions).
    if (index.range < 1 || index.range > extent)
      throw ShapeError("gather_at '" + self.args()[0].label() + "': the table has " +
                       std::to_string(extent) + " rows but the index '" + index.name +
                       "' ranges over " + std::to_string(index.range));
    ir::Projections q = without_iterator(p, rows[*axis].terms[0].symbol);
    q.project_rhs[0][*axis] = at_static(index);
    q.debug = "row " + index.name + " of " + self.args()[0].label();
    return std::vector<ir::AsgnRef>{assign(self.value(), self.args()[0].value(), q, true)};
  };
  Tensor row = detail::make_op(std::move(spec));
  row.impl().static_index = index;
  return row;
}

Tensor write_at(const Tensor& value, const Tensor& cache, const ir::StaticSymbol& index) {
  if (cache.requires_grad() || cache.impl().host_values == nullptr)
    throw RuntimeUsageError("write_at: the cache '" + cache.label() +
                            "' must be a host literal (not a parameter or a computed tensor)");
  detail::OpSpec spec;
  spec.label = cache.label() + "_written";
  spec.args = {value, cache};
  // The value has no batch axes; the cache adds one (t) in front of the value's axes.
  spec.logic = shape::Einsum{"| -> ...; t | -> ... => t | -> ..."};
  spec.forward = [index](const Tensor& self, const ir::Projections& p) {
    const Tensor& value = self.args()[0];
    const Tensor& cache = self.args()[1];
    const auto& cells = p.project_rhs.at(1);
    const std::vector<std::int64_t>& dims = p.rhs_dims.at(1);
    const bool leading_row = !cells.empty() && cells[0].is_iterator() &&
                             !mentions(p.project_rhs.at(0), cells[0].terms[0].symbol);
    const std::vector<std::int64_t> rest(dims.begin() + (dims.empty() ? 0 : 1), dims.end());
    if (!leading_row || dims[0] != index.range || value.value()->dims != rest)
      throw ShapeError("write_at: the cache '" + cache.label() + "' of dims " + dims_text(dims) +
                       " must be a leading axis of " + std::to_string(index.range) +
                       " rows (the index '" + index.name + "') over the value '" + value.label() +
                       "' of dims " + dims_text(value.value()->dims));
    // cache[index, ...] = value[...], then the result is the cache as written.
    ir::Projections w = without_iterator(p, cells[0].terms[0].symbol);
    w.project_lhs = cells;
    w.project_lhs[0] = at_static(index);
    w.lhs_dims = dims;
    w.project_rhs = {p.project_rhs[0]};
    w.rhs_dims = {p.rhs_dims[0]};
    w.debug = "row " + index.name + " of " + cache.label();
    ir::Projections read = p;
    read.project_rhs = {cells};
    read.rhs_dims = {dims};
    return std::vector<ir::AsgnRef>{assign(cache.value(), value.value(), w, false),
                                    assign(self.value(), cache.value(), read, true)};
  };
  Tensor written = detail::make_op(std::move(spec));
  written.impl().static_index = index;
  return written;
}

}  // namespace cannl::nn
