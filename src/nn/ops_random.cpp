// uniform_at (include/cannl/nn/ops.h): training-time randomness keyed by a step symbol and by the
// count of training steps done.
//
// key = threefry(threefry(name key, step), steps done), computed once into a one-cell node, and
// bits = threefry(key, cell offset) (semantics-frontend.md 5.5, `uniform_at`; the steps-done
// counter is ours); uniform1 turns each 128-bit value into one float in [0, 1).
#include "cannl/nn/ops.h"

#include <set>

#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/op_builder.h"
#include "nn/update_util.h"

namespace cannl::nn {
namespace {

using cannl::detail::ap;
using cannl::detail::arg;
using cannl::detail::lit;
using ir::Op;

/// 53-bit key (exact as a double) from the stream name and the seed (FNV-1a).
double stream_key(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  h ^= static_cast<std::uint64_t>(config::get_int("seed")) * 0x9E3779B97F4A7C15ull;
  return static_cast<double>(h & ((1ull << 53) - 1));
}

/// Index 0 of every axis of a one-cell node (a scalar literal's dims may be empty or all 1).
std::vector<ir::AxisIndex> first_cell(const std::vector<std::int64_t>& dims) {
  return std::vector<ir::AxisIndex>(dims.size(), ir::AxisIndex::fixed(0));
}

/// key := threefry(threefry(stream key, step), steps done), one cell. Materialized: inlined into
/// the draw it would cost two more threefry evaluations per cell.
ir::AsgnRef key_code(const ir::NodeRef& key_cell, const ir::NodeRef& step_cell, const ir::NodeRef& steps_done,
                     double stream) {
  ir::update_memory_mode(*key_cell, ir::MemoryMode::Materialized, 65);
  const Op variant = cannl::detail::default_prng_op();
  ir::AccumOp op;
  op.lhs = key_cell;
  op.accum = Op::Arg2;
  op.initialize_neutral = true;
  op.args = {ir::Operand::of(step_cell), ir::Operand::of(steps_done)};
  op.projections = identity_projections(key_cell->dims, 2);
  op.projections.rhs_dims = {step_cell->dims, steps_done->dims};
  op.projections.project_rhs = {first_cell(step_cell->dims), first_cell(steps_done->dims)};
  op.expr = ap(variant, {ap(variant, {lit(stream), arg(0)}), arg(1)});
  return ir::make_accum(std::move(op));
}

std::vector<ir::AsgnRef> uniform_code(const Tensor& self, const ir::StaticSymbol& step, double stream) {
  const auto& dims = self.value()->dims;
  auto counter = ir::make_node(self.label() + "_counter", ir::DType::U4x32, dims);
  auto step_cell = ir::make_node(self.label() + "_step", ir::DType::U4x32, {1});
  auto key_cell = ir::make_node(self.label() + "_key", ir::DType::U4x32, {1});
  ir::AccumOp op;
  op.lhs = self.value();
  op.accum = Op::Arg2;
  op.initialize_neutral = true;
  op.args = {ir::Operand::of(counter), ir::Operand::of(key_cell)};
  op.projections = identity_projections(dims, 2);
  op.projections.rhs_dims[1] = {1};
  op.projections.project_rhs[1] = {ir::AxisIndex::fixed(0)};
  op.expr = ap(Op::Uniform1, {ap(cannl::detail::default_prng_op(), {arg(1), arg(0)})});
  return {ir::make_fetch(counter, ir::FetchRangeOverOffsets{}), ir::make_fetch(step_cell, ir::FetchEmbedSymbol{step}),
          key_code(key_cell, step_cell, self.args()[1].value(), stream), ir::make_accum(std::move(op))};
}

/// A one-cell u64 literal at 0, which every training step advances by 1 (train::compile_step).
Tensor steps_done_literal(const std::string& name) {
  Tensor steps = literal(name + "_steps_done", {0.0}, {.dtype = ir::DType::U64});
  steps.impl().step_counter = true;
  steps.value()->host_constant = false;  // the step writes it: never packed once out of a routine
  return steps;
}

}  // namespace

Tensor uniform_at(const Tensor& x, const ir::StaticSymbol& step, const std::string& name) {
  const double key = stream_key(name);
  cannl::detail::OpSpec spec;
  spec.label = "uniform_" + name;
  spec.args = {x, steps_done_literal(name)};
  // x's precision, as when x was the only argument: the u64 counter must not promote the result.
  spec.dtype = x.impl().top_down_dtype ? cannl::detail::default_dtype() : x.value()->dtype;
  spec.logic = shape::Pointwise{};
  spec.forward = [step, key](const Tensor& self, const ir::Projections&) {
    return uniform_code(self, step, key);
  };
  Tensor u = cannl::detail::make_op(std::move(spec));
  u.impl().static_index = step;
  return u;
}

std::vector<Tensor> step_counters_of(const std::vector<Tensor>& roots) {
  std::vector<Tensor> counters;
  std::set<std::string> names;
  for (const Tensor& t : literals_of(roots)) {
    if (!t.impl().step_counter) continue;
    if (!names.insert(t.label()).second)
      throw RuntimeUsageError("the random stream of '" + t.label() + "' is drawn by two uniform_at (dropout) sites: "
                              "they would draw the same values, and their step counters would share one checkpoint "
                              "entry; give each site a stream of its own (DropoutOptions::stream)");
    counters.push_back(t);
  }
  return counters;
}

std::vector<ir::AsgnRef> advance_step_counters(const std::vector<Tensor>& counters) {
  std::vector<ir::AsgnRef> code;
  for (const Tensor& c : counters) code.push_back(nn::detail::elementwise(c.value(), Op::Add, {}, lit(1)));
  return code;
}

}  // namespace cannl::nn
