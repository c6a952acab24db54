// Leaves: parameters, constants, host literals and ranges.
#include <cstdio>
#include <optional>
#include <utility>

#include "cannl/support/checked.h"
#include "cannl/support/error.h"
#include "cannl/tensor/op_builder.h"

namespace cannl {
namespace {

/// A given size below 0 would reach shape inference and element counts as a huge or
/// negative count: refused here, naming the leaf and the row.
void check_given_sizes(const std::string& label, const shape::ShapeSpec& given) {
  const std::pair<const char*, const std::optional<std::vector<std::int64_t>>*> rows[] = {
      {"batch", &given.batch}, {"input", &given.input}, {"output", &given.output}};
  for (const auto& [kind, row] : rows)
    if (row->has_value())
      for (const std::int64_t d : **row)
        if (d < 0)
          throw ShapeError("'" + label + "': its " + kind + " row has the size " + std::to_string(d) +
                           "; sizes are at least 0");
}

std::shared_ptr<TensorImpl> make_leaf(const std::string& label, const shape::ShapeSpec& given,
                                      shape::Terminal terminal, ir::DType dtype) {
  check_given_sizes(label, given);
  auto impl = std::make_shared<TensorImpl>();
  impl->id = detail::next_tensor_id();
  impl->label = label;
  impl->shape = shape::new_shape(label, given);
  impl->step_id = shape::propagate({label, impl->shape, {}, terminal});
  impl->value = ir::make_node(label, dtype);
  return impl;
}

CodeBuilder fetch_builder(ir::FetchOp op) {
  return [op](const Tensor& self, const ir::Projections&) {
    return std::vector<ir::AsgnRef>{ir::make_fetch(self.value(), op)};
  };
}

}  // namespace

Tensor param(const std::string& name, const ParamOptions& options) {
  shape::ShapeSpec given;
  given.batch = std::vector<std::int64_t>{};
  given.input = options.input;
  given.output = options.output;
  const ir::DType dtype = options.dtype.value_or(detail::default_dtype());
  auto impl = make_leaf(name, given, shape::Terminal{.is_param = true}, dtype);
  impl->is_param = true;
  impl->init = options.init;
  impl->specified_dtype = options.dtype;
  ir::update_memory_mode(*impl->value, ir::MemoryMode::Materialized, 30);
  impl->grad = ir::make_node("grad_" + name, dtype);
  // Parameter gradients are read by optimizers in later routines and by users: keep them.
  ir::update_memory_mode(*impl->grad, ir::MemoryMode::Materialized, 31);
  return Tensor(std::move(impl));
}

Tensor constant(double value, std::optional<ir::DType> dtype) {
  char label[32];
  std::snprintf(label, sizeof label, "%g", value);
  auto impl = make_leaf(std::string("const_") + label, {},
                        shape::Terminal{.is_scalar_constant = true},
                        dtype.value_or(detail::default_dtype()));
  impl->top_down_dtype = !dtype.has_value();
  impl->forward = fetch_builder(ir::FetchConstant{value});
  ir::update_memory_mode(*impl->value, ir::MemoryMode::EffectivelyConstant, 32);
  return Tensor(std::move(impl));
}

Tensor literal(const std::string& name, std::vector<double> values, const LeafOptions& options) {
  shape::ShapeSpec given;
  const std::vector<std::int64_t> none;
  given.batch = options.batch.value_or(none);
  given.input = options.input.value_or(none);
  given.output = options.output.value_or(none);
  check_given_sizes(name, given);
  std::vector<std::int64_t> all_dims;
  for (const auto* row : {&*given.batch, &*given.input, &*given.output})
    all_dims.insert(all_dims.end(), row->begin(), row->end());
  const std::optional<std::int64_t> expected = checked_product(all_dims);
  if (!expected)
    throw ShapeError("literal '" + name + "': size overflow: its rows hold more than 2^63 elements");
  if (*expected != static_cast<std::int64_t>(values.size()))
    throw ShapeError("literal '" + name + "': " + std::to_string(values.size()) +
                     " values given but its rows hold " + std::to_string(*expected) + " elements");
  auto terminal = shape::Terminal{.total_elems = static_cast<std::int64_t>(values.size())};
  auto impl = make_leaf(name, given, terminal, options.dtype.value_or(detail::default_dtype()));
  impl->host_values = std::make_shared<const std::vector<double>>(std::move(values));
  impl->value->host_constant = true;
  ir::update_memory_mode(*impl->value, ir::MemoryMode::Materialized, 49);
  return Tensor(std::move(impl));
}

Tensor range(std::int64_t n) {
  shape::ShapeSpec given{std::vector<std::int64_t>{}, std::vector<std::int64_t>{},
                         std::vector<std::int64_t>{n}};
  auto impl = make_leaf("range_" + std::to_string(n), given, shape::Terminal{},
                        detail::default_dtype());
  impl->forward = fetch_builder(ir::FetchRangeOverOffsets{});
  return Tensor(std::move(impl));
}

std::vector<std::int64_t> Tensor::dims() const {
  detail::check_current(*this);
  shape::finish_inference();
  return shape::dims(*impl_->shape);
}

std::string Tensor::shape_string() const {
  detail::check_current(*this);
  shape::finish_inference();
  return shape::to_string(*impl_->shape);
}

std::string Tensor::partial_shape_string() const {
  // Printing must not throw (a repr); a stale shape's variables would print another graph's.
  if (!detail::is_current(*this)) return "<created before reset_tensor_state()>";
  return shape::to_string(*impl_->shape);
}

void reset_tensor_state() { shape::reset(); }

}  // namespace cannl
