// Every nn block and nn op against central finite differences in f64 on the interpreter: the
// scalar checked is sum(block output * fixed random weights), so that gradients that cancel under
// a plain sum (softmax rows) are still exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "block_test_util.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"

namespace cannl {
namespace {

using testing_util::batch_input;
using testing_util::Dims;
using testing_util::lcg_values;
using Builder = std::function<Tensor(std::vector<Tensor>& params)>;

struct BlockCase {
  std::string name;
  Builder build;  // returns the block's output; params collects every parameter to perturb
  double low = -1, high = 1;
  bool scalar = false;  // the output is a scalar loss: checked as is, without weights
  bool compiled = false;  // run on the C backend (many parameters: interpreting is slow)
};

Tensor p(std::vector<Tensor>& ps, const std::string& name, Dims output, Dims input = {}) {
  ps.push_back(param(name, {.input = input, .output = output}));
  return ps.back();
}

/// Adds the parameters a block created itself.
void add_params(std::vector<Tensor>& ps, const Tensor& out) {
  for (const auto& t : params_of({out})) {
    bool known = false;
    for (const auto& q : ps) known = known || q.id() == t.id();
    if (!known) ps.push_back(t);
  }
}

class BlockGradient : public testing::TestWithParam<BlockCase> {
 protected:
  void SetUp() override {
    reset_tensor_state();
    config::set_override("default_prec", "f64");
  }
  void TearDown() override { config::clear_overrides(); }
};

double run_loss(runtime::Context& ctx, const runtime::Routine& r, const Tensor& loss) {
  ctx.run(r);
  return ctx.get_values(loss.value()).at(0);
}

TEST_P(BlockGradient, MatchesCentralFiniteDifferences) {
  const BlockCase& c = GetParam();
  std::vector<Tensor> params;
  Tensor out = c.build(params);
  add_params(params, out);
  Tensor loss = out;
  if (!c.scalar) {
    Tensor weights = param("check_weights", {.input = Dims{}});
    loss = sum(pointmul(out, weights));
    params.push_back(weights);
  }
  auto ctx = c.compiled ? runtime::Context::cpu() : runtime::Context::interpreter();
  train::upload_literals(ctx, {loss});
  auto routine = ctx.compile(grad_update_code(loss), "grad_" + c.name);
  for (std::size_t k = 0; k < params.size(); ++k)
    ctx.set_values(params[k].value(), lcg_values(params[k].value()->num_elements(), c.low,
                                                 c.high, static_cast<unsigned>(k)));
  ctx.run(routine);
  std::vector<std::vector<double>> analytic;
  for (const auto& prm : params) analytic.push_back(ctx.get_values(prm.grad()));
  for (std::size_t k = 0; k < params.size(); ++k) {
    auto x = ctx.get_values(params[k].value());
    // Every cell of small parameters; 8 spread cells of larger ones (keeps the suite fast).
    const std::size_t stride = std::max<std::size_t>(1, x.size() / 8);
    for (std::size_t i = k % stride; i < x.size(); i += stride) {
      const double h = 1e-5 * std::max(1.0, std::abs(x[i]));
      const double saved = x[i];
      x[i] = saved + h;
      ctx.set_values(params[k].value(), x);
      const double up = run_loss(ctx, routine, loss);
      x[i] = saved - h;
      ctx.set_values(params[k].value(), x);
      const double down = run_loss(ctx, routine, loss);
      x[i] = saved;
      ctx.set_values(params[k].value(), x);
      const double numeric = (up - down) / (2 * h);
      const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[k][i])});
      EXPECT_LT(std::abs(numeric - analytic[k][i]) / scale, 1e-6)
          << c.name << ": d loss / d " << params[k].label() << "[" << i << "] analytic "
          << analytic[k][i] << " numeric " << numeric;
    }
  }
}

Tensor one_hot_targets(const std::vector<std::int64_t>& ids, std::int64_t classes) {
  return nn::one_hot_of_ids(nn::ids_literal("ids", ids, {static_cast<std::int64_t>(ids.size())}),
                            classes);
}

std::vector<BlockCase> cases() {
  return {
      {"gelu", [](auto& ps) { return nn::gelu(p(ps, "x", {2, 3})); }, -3, 3},
      {"softmax", [](auto& ps) { return nn::softmax(p(ps, "x", {4}, {3})); }, -2, 2},
      {"log_softmax", [](auto& ps) { return nn::log_softmax(p(ps, "x", {4}, {3})); }, -2, 2},
      {"softmax_over_input", [](auto& ps) {
         return nn::softmax(p(ps, "x", {2}, {3}), "...|t->... => ...|->..."); }, -2, 2},
      {"cross_entropy_one_hot", [](auto& ps) {
         Tensor logits = batch_input(ps, "logits", {3}, {5});
         return nn::cross_entropy_loss(logits, one_hot_targets({4, 0, 2}, 5)); }, -2, 2, true},
      {"cross_entropy_soft_targets_mask", [](auto& ps) {
         Tensor logits = batch_input(ps, "logits", {3}, {4});
         Tensor targets = batch_input(ps, "targets", {3}, {4});
         Tensor mask = literal("mask", {1, 0, 1}, {.batch = Dims{3}});
         return nn::cross_entropy_loss(logits, targets, {.mask = mask, .normalize_by = 2.0}); },
       0.1, 1, true},
      {"layer_norm", [](auto& ps) {
         nn::LayerNorm ln("ln", {.eps = 1e-5});
         return ln(batch_input(ps, "x", {2, 3}, {5})); }, -2, 2},
      {"mlp", [](auto& ps) {
         nn::Mlp mlp("mlp", {.hidden = {4}, .out = {2}, .output_bias = true});
         return mlp(batch_input(ps, "x", {3}, {3})); }, 0.05, 1},
      {"embedding", [](auto& ps) {
         nn::Embedding wte("wte", 6, 3);
         Tensor ids = nn::ids_literal("ids", {5, 0, 5, 2}, {2, 2});
         return wte(nn::one_hot_of_ids(ids, 6)) + p(ps, "shift", {3}); }, -1, 1},
      {"attention_causal", [](auto& ps) {
         nn::MultiHeadAttention mha("mha", {.heads = 2, .d_k = 2, .d_model = 3});
         return mha(batch_input(ps, "x", {2, 3}, {3}), nn::causal_mask(3)); }, -1, 1, false, true},
      {"decoder_block", [](auto& ps) {
         nn::DecoderBlock block("blk", {.heads = 2, .d_model = 4, .d_ff = 6});
         return block(batch_input(ps, "x", {1, 3}, {4}), nn::causal_mask(3)); }, -1, 1, false, true},
  };
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockGradient, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<BlockCase>& info) { return info.param.name; });

}  // namespace
}  // namespace cannl
