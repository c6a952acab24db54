// uniform_at (include/cannl/nn/ops.h): training-time randomness keyed by a step symbol.
//
// key = threefry(name key, step) and bits = threefry(key, cell offset) (semantics-frontend.md 5.5,
// `uniform_at`); uniform1 turns each 128-bit value into one float in [0, 1).
#include "cannl/nn/ops.h"

#include "cannl/support/config.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/op_builder.h"

namespace cannl::nn {
namespace {

using detail::ap;
using detail::lit;
using ir::Op;

/// 53-bit key (exact as a double) from the stream name and the seed (FNV-1a).
double stream_key(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  h ^= static_cast<std::uint64_t>(config::get_int("seed")) * 0x9E3779B97F4A7C15ull;
  return static_cast<double>(h & ((1ull << 53) - 1));
}

std::vector<ir::AsgnRef> uniform_code(const Tensor& self, const ir::StaticSymbol& step,
                                      double key) {
  const auto& dims = self.value()->dims;
  auto counter = ir::make_node(self.label() + "_counter", ir::DType::U4x32, dims);
  auto step_cell = ir::make_node(self.label() + "_step", ir::DType::U4x32, {1});
  const Op variant = detail::default_prng_op();
  ir::AccumOp op;
  op.lhs = self.value();
  op.accum = Op::Arg2;
  op.initialize_neutral = true;
  op.args = {ir::Operand::of(counter), ir::Operand::of(step_cell)};
  op.projections = identity_projections(dims, 2);
  op.projections.rhs_dims[1] = {1};
  op.projections.project_rhs[1] = {ir::AxisIndex::fixed(0)};
  auto step_key = ap(variant, {lit(key), detail::arg(1)});
  op.expr = ap(Op::Uniform1, {ap(variant, {step_key, detail::arg(0)})});
  return {ir::make_fetch(counter, ir::FetchRangeOverOffsets{}),
          ir::make_fetch(step_cell, ir::FetchEmbedSymbol{step}), ir::make_accum(std::move(op))};
}

}  // namespace

Tensor uniform_at(const Tensor& x, const ir::StaticSymbol& step, const std::string& name) {
  const double key = stream_key(name);
  detail::OpSpec spec;
  spec.label = "uniform_" + name;
  spec.args = {x};
  spec.logic = shape::Pointwise{};
  spec.forward = [step, key](const Tensor& self, const ir::Projections&) {
    return uniform_code(self, step, key);
  };
  Tensor u = detail::make_op(std::move(spec));
  u.impl().static_index = step;
  return u;
}

}  // namespace cannl::nn
