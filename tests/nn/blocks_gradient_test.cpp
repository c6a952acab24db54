// Every nn block and nn op against central finite differences in f64 on the interpreter: the
// scalar checked is sum(block output * fixed random weights), so that gradients that cancel under
// a plain sum (softmax rows) are still exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "block_test_util.h"
#include "gradient_check.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "tensor/fresh_tensors.h"

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
  testing_util::FreshTensors fresh_{"f64"};
};

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
  // Every cell of small parameters; about 8 spread cells of larger ones (keeps the suite fast).
  testing_util::expect_gradients_match(ctx, loss, params, c.name,
                                       {.low = c.low, .high = c.high, .max_cells = 8});
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
      {"cross_entropy_composed_soft_targets", [](auto& ps) {
         Tensor logits = batch_input(ps, "logits", {3}, {4});
         Tensor targets = batch_input(ps, "targets", {3}, {4});
         return nn::cross_entropy(logits, targets); }, 0.1, 1, true},
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
      {"batch_norm1d", [](auto& ps) {
         nn::BatchNorm1d bn("bn", {.num_features = 3});
         return bn(batch_input(ps, "x", {4}, {3})); }, -1, 1},
      {"batch_norm2d", [](auto& ps) {
         nn::BatchNorm2d bn("bn", {.num_features = 2});
         return bn(batch_input(ps, "x", {2}, {2, 3, 2})); }, -1, 1, false, true},
      {"conv2d_strided_padded", [](auto& ps) {
         nn::Conv2d conv("conv", {.in_channels = 2, .out_channels = 3, .stride = 2, .padding = true});
         return conv(batch_input(ps, "x", {1}, {4, 4, 2})); }, -1, 1, false, true},
      {"conv2d_dilated", [](auto& ps) {
         nn::Conv2d conv("conv", {.in_channels = 1, .out_channels = 2, .dilation = 2});
         return conv(batch_input(ps, "x", {2}, {5, 6, 1})); }, -1, 1, false, true},
      {"depthwise_separable_conv", [](auto& ps) {
         nn::DepthwiseSeparableConv2d conv("ds", {.in_channels = 2, .out_channels = 3, .padding = true});
         return conv(batch_input(ps, "x", {1}, {4, 4, 2})); }, -1, 1, false, true},
      {"max_pool2d", [](auto& ps) {
         return nn::MaxPool2d({.window = 2})(batch_input(ps, "x", {1}, {4, 4, 2})); }, -1, 1},
      {"avg_pool2d", [](auto& ps) {
         return nn::AvgPool2d({.window = 3, .stride = 1})(batch_input(ps, "x", {1}, {4, 4, 2})); }, -1, 1},
      {"rope", [](auto& ps) {
         return nn::rope(batch_input(ps, "x", {1, 3}, {2, 4}), {.seq_len = 3, .head_dim = 4}); }, -1, 1},
      {"attention_rope", [](auto& ps) {
         nn::MultiHeadAttention mha("mha", {.heads = 2, .d_k = 2, .d_model = 3,
                                            .rope = nn::RopeOptions{.seq_len = 3}});
         return mha(batch_input(ps, "x", {1, 3}, {3}), nn::causal_mask(3)); }, -1, 1, false, true},
  };
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockGradient, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<BlockCase>& info) { return info.param.name; });

}  // namespace
}  // namespace cannl
