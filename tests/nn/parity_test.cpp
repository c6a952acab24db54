// The nn blocks against PyTorch (fixtures from scripts/make_parity_fixtures.py, computed in f64):
// forward output and the gradients of sum(out * wts) w.r.t. inputs and parameters, with cannl in
// f32 on the C backend. Acceptance: max relative error (parity_util.h) < 1e-5.
#include <gtest/gtest.h>

#include <functional>

#include "block_test_util.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/nn/positions.h"
#include "parity_util.h"

namespace cannl {
namespace {

using namespace testing_util;

constexpr double kTolerance = 1e-5;

/// A cannl parameter holding fixture tensor `name` (transposed as [rows, cols] when rows > 0).
struct Binding {
  Tensor param;
  std::string name;
  std::int64_t transpose_rows = 0;
};

struct ParityModel {
  Tensor out;
  std::vector<Binding> bindings;
  Dims out_batch, out_output;  // the rows of `out` (for the weights literal)
  /// Nodes compared with the fixture tensor of the same name after the step (running statistics).
  std::vector<std::pair<ir::NodeRef, std::string>> states;
  /// A forward-only output built after the step in the same context, compared with `out_eval`.
  std::function<Tensor()> eval_out;
};

using ModelBuilder = std::function<ParityModel(const Fixture&)>;

std::vector<double> as_param(const Fixture& f, const Binding& b) {
  const auto& v = f.at(b.name).values;
  return b.transpose_rows > 0 ? transposed(v, b.transpose_rows) : v;
}

std::vector<double> as_fixture(const std::vector<double>& v, const Binding& b) {
  if (b.transpose_rows == 0) return v;
  return transposed(v, static_cast<std::int64_t>(v.size()) / b.transpose_rows);
}

void check_parity(const std::string& name, const ModelBuilder& build) {
  reset_tensor_state();
  config::set_override("default_prec", "f32");
  const Fixture f = load_fixture(name);
  ParityModel m = build(f);
  Tensor wts = literal("wts", f.at("wts").values,
                       {.batch = m.out_batch, .input = Dims{}, .output = m.out_output});
  Tensor loss = sum(pointmul(m.out, wts));
  resolve_shapes({loss});
  ir::update_memory_mode(*m.out.value(), ir::MemoryMode::Materialized, 64);  // read back below
  auto ctx = runtime::Context::cpu();
  train::upload_literals(ctx, {loss});
  auto routine = ctx.compile(grad_update_code(loss), "parity_" + name);
  for (const auto& b : m.bindings) ctx.set_values(b.param.value(), as_param(f, b));
  ctx.run(routine);
  const double out_error = max_relative_error(ctx.get_values(m.out.value()), f.at("out").values);
  EXPECT_LT(out_error, kTolerance) << name << ": forward";
  for (const auto& b : m.bindings) {
    if (!f.count("grad_" + b.name)) continue;
    const double error = max_relative_error(as_fixture(ctx.get_values(b.param.grad()), b),
                                            f.at("grad_" + b.name).values);
    EXPECT_LT(error, kTolerance) << name << ": gradient of " << b.name;
    std::printf("  %-22s grad_%-8s max rel err %.3g\n", name.c_str(), b.name.c_str(), error);
  }
  std::printf("  %-22s out           max rel err %.3g\n", name.c_str(), out_error);
  for (const auto& [node, state] : m.states) {
    const double error = max_relative_error(ctx.get_values(node), f.at(state).values);
    EXPECT_LT(error, kTolerance) << name << ": " << state << " after the step";
    std::printf("  %-22s %-13s max rel err %.3g\n", name.c_str(), state.c_str(), error);
  }
  if (m.eval_out) {
    Tensor eval = m.eval_out();
    auto forward = train::compile_forward(ctx, {eval}, "parity_eval_" + name);
    ctx.run(forward);
    const double error = max_relative_error(ctx.get_values(eval.value()), f.at("out_eval").values);
    EXPECT_LT(error, kTolerance) << name << ": eval-mode forward";
    std::printf("  %-22s out_eval      max rel err %.3g\n", name.c_str(), error);
  }
  config::clear_overrides();
}

/// An input of the fixture as a differentiable batch tensor: [batch..., features...] with the
/// last `feature_axes` axes as output axes.
Tensor input_of(std::vector<Binding>& bs, const Fixture& f, const std::string& name,
                std::size_t feature_axes = 1) {
  Dims dims = f.at(name).dims;
  const Dims features(dims.end() - static_cast<std::ptrdiff_t>(feature_axes), dims.end());
  dims.resize(dims.size() - feature_axes);
  std::vector<Tensor> holder;
  Tensor x = batch_input(holder, name, dims, features);
  std::int64_t rows = 1;
  for (auto d : dims) rows *= d;
  bs.push_back({holder.back(), name, rows});
  return x;
}

Dims leading(const Fixture& f, const std::string& name, std::size_t feature_axes = 1) {
  Dims d = f.at(name).dims;
  d.resize(d.size() - feature_axes);
  return d;
}

Dims trailing(const Fixture& f, const std::string& name, std::size_t feature_axes = 1) {
  const Dims& d = f.at(name).dims;
  return Dims(d.end() - static_cast<std::ptrdiff_t>(feature_axes), d.end());
}

/// A fixture tensor as a constant host literal with the same batch / feature split as input_of.
Tensor literal_of(const Fixture& f, const std::string& name, std::size_t feature_axes = 1) {
  return literal(name, f.at(name).values,
                 {.batch = leading(f, name, feature_axes), .input = Dims{},
                  .output = trailing(f, name, feature_axes)});
}

Tensor ids_of(const Fixture& f) {
  std::vector<std::int64_t> ids;
  for (double v : f.at("ids").values) ids.push_back(static_cast<std::int64_t>(v));
  return nn::ids_literal("ids", ids, f.at("ids").dims);
}

ParityModel pointwise_model(const Fixture& f, const std::function<Tensor(const Tensor&)>& op) {
  ParityModel m;
  m.out = op(input_of(m.bindings, f, "x"));
  m.out_batch = leading(f, "x");
  m.out_output = {f.at("x").dims.back()};
  return m;
}

TEST(Parity, LayerNorm) {
  check_parity("layer_norm", [](const Fixture& f) {
    nn::LayerNorm ln("ln", {.eps = 1e-5});
    ParityModel m = pointwise_model(f, [&](const Tensor& x) { return ln(x); });
    m.bindings.push_back({ln.gamma, "gamma"});
    m.bindings.push_back({ln.beta, "beta"});
    return m;
  });
}
TEST(Parity, Softmax) {
  check_parity("softmax", [](const Fixture& f) {
    return pointwise_model(f, [](const Tensor& x) { return nn::softmax(x); });
  });
}
TEST(Parity, LogSoftmax) {
  check_parity("log_softmax", [](const Fixture& f) {
    return pointwise_model(f, [](const Tensor& x) { return nn::log_softmax(x); });
  });
}
TEST(Parity, Gelu) {
  check_parity("gelu", [](const Fixture& f) {
    return pointwise_model(f, [](const Tensor& x) { return nn::gelu(x); });
  });
}

ParityModel cross_entropy_model(const Fixture& f, bool masked) {
  ParityModel m;
  Tensor logits = input_of(m.bindings, f, "logits");
  Tensor targets = nn::one_hot_of_ids(ids_of(f), f.at("logits").dims.back());
  nn::CrossEntropyOptions options;
  if (masked) {
    options.mask = literal("mask", f.at("mask").values, {.batch = f.at("mask").dims});
    options.normalize_by = 2.5;
  }
  m.out = nn::cross_entropy_loss(logits, targets, options);
  return m;
}
TEST(Parity, CrossEntropy) {
  check_parity("cross_entropy", [](const Fixture& f) { return cross_entropy_model(f, false); });
}
TEST(Parity, CrossEntropyMasked) {
  check_parity("cross_entropy_masked", [](const Fixture& f) { return cross_entropy_model(f, true); });
}

TEST(Parity, Embedding) {
  check_parity("embedding", [](const Fixture& f) {
    const Dims table = f.at("table").dims;
    nn::Embedding wte("wte", table[0], table[1]);
    ParityModel m;
    m.out = wte(nn::one_hot_of_ids(ids_of(f), table[0]));
    m.bindings.push_back({wte.table, "table", table[0]});
    m.out_batch = f.at("ids").dims;
    m.out_output = {table[1]};
    return m;
  });
}

TEST(Parity, Mlp) {
  check_parity("mlp", [](const Fixture& f) {
    nn::Mlp mlp("mlp", {.hidden = {f.at("w1").dims[0]}, .out = {f.at("w2").dims[0]}});
    ParityModel m;
    m.out = mlp(input_of(m.bindings, f, "x"));
    m.bindings.push_back({mlp.layers[0].w, "w1"});
    m.bindings.push_back({*mlp.layers[0].b, "b1"});
    m.bindings.push_back({mlp.layers[1].w, "w2"});
    m.out_batch = leading(f, "x");
    m.out_output = {f.at("w2").dims[0]};
    return m;
  });
}

void bind_attention(std::vector<Binding>& bs, const nn::MultiHeadAttention& mha) {
  bs.push_back({mha.q.w, "wq"});
  bs.push_back({*mha.q.b, "bq"});
  bs.push_back({mha.k.w, "wk"});
  bs.push_back({*mha.k.b, "bk"});
  bs.push_back({mha.v.w, "wv"});
  bs.push_back({*mha.v.b, "bv"});
  bs.push_back({mha.o.w, "wo"});
  bs.push_back({*mha.o.b, "bo"});
}

/// Causal self-attention over the fixture's input x: batch | seq -> d_model.
ParityModel causal_attention_model(const Fixture& f, const nn::AttentionOptions& options) {
  const Dims x = f.at("x").dims;
  nn::MultiHeadAttention mha("mha", options);
  ParityModel m;
  m.out = mha(input_of(m.bindings, f, "x"), nn::causal_mask(x[1]));
  bind_attention(m.bindings, mha);
  m.out_batch = {x[0], x[1]};
  m.out_output = {x[2]};
  return m;
}

TEST(Parity, CausalAttention) {
  check_parity("attention", [](const Fixture& f) {
    return causal_attention_model(f, {.heads = 2, .d_k = 3, .d_model = f.at("x").dims[2]});
  });
}

TEST(Parity, DecoderBlock) {
  check_parity("decoder_block", [](const Fixture& f) {
    const Dims x = f.at("x").dims;
    nn::DecoderBlock block("blk", {.heads = 2, .d_model = x[2], .d_ff = f.at("fc_w").dims[0]});
    ParityModel m;
    m.out = block(input_of(m.bindings, f, "x"), nn::causal_mask(x[1]));
    bind_attention(m.bindings, block.attn);
    for (auto [t, n] : std::vector<std::pair<Tensor, std::string>>{
             {block.ln1.gamma, "ln1_g"}, {block.ln1.beta, "ln1_b"}, {block.ln2.gamma, "ln2_g"},
             {block.ln2.beta, "ln2_b"}, {block.fc.w, "fc_w"}, {*block.fc.b, "fc_b"},
             {block.proj.w, "proj_w"}, {*block.proj.b, "proj_b"}})
      m.bindings.push_back({t, n});
    m.out_batch = {x[0], x[1]};
    m.out_output = {x[2]};
    return m;
  });
}

// ---- normalization with running statistics ----

/// One training step of a BatchNorm block (batch statistics; the running ones advance), then the
/// block in eval mode on x_eval in the same context (running statistics).
ParityModel batch_norm_model(const Fixture& f, const nn::BatchNorm& bn, std::size_t feature_axes) {
  ParityModel m;
  m.out = bn(input_of(m.bindings, f, "x", feature_axes));
  m.bindings.push_back({bn.gamma, "gamma"});
  m.bindings.push_back({bn.beta, "beta"});
  m.out_batch = leading(f, "x", feature_axes);
  m.out_output = trailing(f, "x", feature_axes);
  m.states = {{bn.running_mean.value(), "running_mean"}, {bn.running_var.value(), "running_var"}};
  m.eval_out = [&f, bn, feature_axes] {
    return bn(literal_of(f, "x_eval", feature_axes), nn::Mode::Eval);
  };
  return m;
}
TEST(Parity, BatchNorm1d) {
  check_parity("batch_norm1d", [](const Fixture& f) {
    nn::BatchNorm1d bn("bn", {.num_features = f.at("gamma").dims[0]});
    return batch_norm_model(f, bn, 1);
  });
}
TEST(Parity, BatchNorm2d) {
  check_parity("batch_norm2d", [](const Fixture& f) {
    nn::BatchNorm2d bn("bn", {.num_features = f.at("gamma").dims[0]});
    return batch_norm_model(f, bn, 3);
  });
}

// ---- convolutions and pooling (images channels-last: batch | h, w, c) ----

/// A block over the fixture's image x (NHWC) with the output's rows taken from `out`.
ParityModel image_model(const Fixture& f, const std::function<Tensor(const Tensor&)>& block) {
  ParityModel m;
  m.out = block(input_of(m.bindings, f, "x", 3));
  m.out_batch = leading(f, "out", 3);
  m.out_output = trailing(f, "out", 3);
  return m;
}

nn::Conv2dOptions conv_options(const Fixture& f) {
  const Dims& w = f.at("w").dims;  // [out, kh, kw, in]
  return {.in_channels = w[3], .out_channels = w[0], .kernel = w[1]};
}

TEST(Parity, Conv2dStridedPadded) {
  check_parity("conv2d", [](const Fixture& f) {
    nn::Conv2dOptions o = conv_options(f);
    o.stride = 2;
    o.padding = true;
    nn::Conv2d conv("conv", o);
    ParityModel m = image_model(f, [&](const Tensor& x) { return conv(x); });
    m.bindings.push_back({conv.w, "w"});
    m.bindings.push_back({*conv.b, "b"});
    return m;
  });
}
TEST(Parity, Conv2dDilatedValid) {
  check_parity("conv2d_dilated", [](const Fixture& f) {
    nn::Conv2dOptions o = conv_options(f);
    o.dilation = 2;
    nn::Conv2d conv("conv", o);
    ParityModel m = image_model(f, [&](const Tensor& x) { return conv(x); });
    m.bindings.push_back({conv.w, "w"});
    m.bindings.push_back({*conv.b, "b"});
    return m;
  });
}
TEST(Parity, DepthwiseSeparableConv) {
  check_parity("depthwise_separable_conv", [](const Fixture& f) {
    const Dims& pw = f.at("pointwise").dims;  // [out, in]
    nn::DepthwiseSeparableConv2d conv(
        "ds", {.in_channels = pw[1], .out_channels = pw[0], .kernel = f.at("depthwise").dims[1],
               .padding = true});
    ParityModel m = image_model(f, [&](const Tensor& x) { return conv(x); });
    m.bindings.push_back({conv.depthwise, "depthwise"});
    m.bindings.push_back({conv.pointwise, "pointwise"});
    m.bindings.push_back({*conv.b, "b"});
    return m;
  });
}
TEST(Parity, MaxPool2d) {
  check_parity("max_pool2d", [](const Fixture& f) {
    return image_model(f, [](const Tensor& x) { return nn::MaxPool2d({.window = 2})(x); });
  });
}
TEST(Parity, AvgPool2d) {
  check_parity("avg_pool2d", [](const Fixture& f) {
    return image_model(f, [](const Tensor& x) { return nn::AvgPool2d({.window = 3, .stride = 2})(x); });
  });
}

// ---- positions ----

TEST(Parity, RotaryPositions) {
  check_parity("rope", [](const Fixture& f) {
    const Dims& x = f.at("x").dims;  // [batch, seq, heads, d]
    ParityModel m;
    m.out = nn::rope(input_of(m.bindings, f, "x", 2), {.seq_len = x[1], .head_dim = x[3]});
    m.out_batch = {x[0], x[1]};
    m.out_output = {x[2], x[3]};
    return m;
  });
}
TEST(Parity, CausalAttentionWithRope) {
  check_parity("attention_rope", [](const Fixture& f) {
    const Dims x = f.at("x").dims;
    return causal_attention_model(f, {.heads = 2, .d_k = f.at("wq").dims[0] / 2, .d_model = x[2],
                                      .rope = nn::RopeOptions{.seq_len = x[1]}});
  });
}
TEST(Parity, SinusoidalPositions) {
  check_parity("sinusoidal_positions", [](const Fixture& f) {
    const Dims& x = f.at("x").dims;
    return pointwise_model(f, [&](const Tensor& in) { return in + nn::sinusoidal_positions(x[1], x[2]); });
  });
}
TEST(Parity, LearnedPositions) {
  check_parity("learned_positions", [](const Fixture& f) {
    const Dims& table = f.at("table").dims;  // [max_len, dim]
    nn::LearnedPositions wpe("wpe", table[0], table[1]);
    ParityModel m = pointwise_model(f, [&](const Tensor& in) { return in + wpe(f.at("x").dims[1]); });
    m.bindings.push_back({wpe.table, "table", table[0]});
    return m;
  });
}

}  // namespace
}  // namespace cannl
