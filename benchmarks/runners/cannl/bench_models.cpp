// The mlp, conv and gpt workloads as cannl graphs, and the cell that compiles and steps them.
#include "bench_models.h"

#include <cmath>

#include "cannl/nn/blocks.h"
#include "cannl/nn/functional.h"
#include "cannl/nn/gpt2.h"
#include "cannl/support/error.h"
#include "cannl/tensor/autodiff.h"
#include "cannl/tensor/einsum_ops.h"
#include "cannl/tensor/precision_policy.h"

namespace cannl::bench {
namespace {

using Dims = std::vector<std::int64_t>;

std::vector<double> one_hot(const std::vector<double>& labels, std::int64_t classes) {
  std::vector<double> out(labels.size() * static_cast<std::size_t>(classes), 0.0);
  for (std::size_t i = 0; i < labels.size(); ++i)
    out[i * static_cast<std::size_t>(classes) + static_cast<std::size_t>(labels[i])] = 1.0;
  return out;
}

/// All batches of the fixture's inputs as one literal [n_batches, batch | features...].
Tensor batches_literal(const std::string& name, const io::SafetensorsFile& f, Dims features) {
  const Dims& shape = f.info(name).shape;
  return literal(name, f.to_f64(name), {.batch = Dims{shape[0], shape[1]}, .output = features});
}

Tensor one_hot_labels(const Workload& w, const io::SafetensorsFile& f, std::int64_t classes) {
  return literal("labels", one_hot(f.to_f64("labels"), classes),
                 {.batch = Dims{w.integer("n_batches"), w.integer("batch")}, .output = Dims{classes}});
}

ir::StaticSymbol batch_symbol(const Workload& w) {
  return ir::StaticSymbol{ir::fresh_symbol(), w.integer("n_batches"), "batch"};
}

void add_linear(LossGraph& g, const nn::Linear& layer, const std::string& name) {
  g.params.emplace_back(name + ".w", layer.w);
  g.params.emplace_back(name + ".b", *layer.b);
}

LossGraph mlp_graph(const Workload& w, const io::SafetensorsFile& f) {
  const Dims dims = w.ints("dims");
  LossGraph g{{}, batch_symbol(w), {}};
  Tensor h = slice_batch(batches_literal("x", f, Dims{dims.front()}), g.batch);
  for (std::size_t i = 1; i < dims.size(); ++i) {
    nn::Linear layer("l" + std::to_string(i - 1), Dims{dims[i]});
    add_linear(g, layer, "l" + std::to_string(i - 1));
    h = layer(h);
    if (i + 1 < dims.size()) h = relu(h);
  }
  g.loss = nn::cross_entropy_loss(h, slice_batch(one_hot_labels(w, f, dims.back()), g.batch));
  return g;
}

LossGraph conv_graph(const Workload& w, const io::SafetensorsFile& f) {
  const Dims image = w.ints("image"), channels = w.ints("conv_channels"), strides = w.ints("strides");
  const std::int64_t kernel = w.integer("kernel"), classes = w.integer("classes");
  LossGraph g{{}, batch_symbol(w), {}};
  Tensor h = slice_batch(batches_literal("x", f, image), g.batch);
  std::int64_t in_channels = image[2];
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const std::string name = "conv" + std::to_string(i);
    Tensor kernel_w = param(name + "_w", {.input = Dims{kernel, kernel, in_channels},
                                          .output = Dims{channels[i]}});
    Tensor bias = param(name + "_b", {.input = Dims{}, .output = Dims{channels[i]}});
    g.params.emplace_back(name + ".w", kernel_w);
    g.params.emplace_back(name + ".b", bias);
    h = conv2d(h, kernel_w, {.stride = strides[i]}) + bias;
    h = max_pool2d(relu(h), w.integer("pool"));
    in_channels = channels[i];
  }
  Dims widths = w.ints("fc");
  widths.push_back(classes);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    nn::Linear layer("fc" + std::to_string(i), Dims{widths[i]});
    add_linear(g, layer, "fc" + std::to_string(i));
    h = layer(h);  // the first reads the pooled features [oh, ow, oc] as its input row
    if (i + 1 < widths.size()) h = relu(h);
  }
  g.loss = nn::cross_entropy_loss(h, slice_batch(one_hot_labels(w, f, classes), g.batch));
  return g;
}

Tensor tokens_literal(const std::string& name, const Workload& w, const io::SafetensorsFile& f) {
  return literal(name, f.to_f64(name),
                 {.batch = Dims{w.integer("n_batches"), w.integer("batch"), w.integer("seq")}});
}

void add_gpt_params(LossGraph& g, const nn::Gpt2Blocks& m) {
  g.params.emplace_back("wte", m.wte.table);
  g.params.emplace_back("wpe", m.wpe.table);
  for (std::size_t i = 0; i < m.h.size(); ++i) {
    const nn::DecoderBlock& b = m.h[i];
    const std::string p = "h" + std::to_string(i) + ".";
    g.params.emplace_back(p + "ln1.gamma", b.ln1.gamma);
    g.params.emplace_back(p + "ln1.beta", b.ln1.beta);
    g.params.emplace_back(p + "ln2.gamma", b.ln2.gamma);
    g.params.emplace_back(p + "ln2.beta", b.ln2.beta);
    add_linear(g, b.attn.q, p + "attn.q");
    add_linear(g, b.attn.k, p + "attn.k");
    add_linear(g, b.attn.v, p + "attn.v");
    add_linear(g, b.attn.o, p + "attn.o");
    add_linear(g, b.fc, p + "fc");
    add_linear(g, b.proj, p + "proj");
  }
  g.params.emplace_back("ln_f.gamma", m.ln_f.gamma);
  g.params.emplace_back("ln_f.beta", m.ln_f.beta);
}

LossGraph gpt_graph(const Workload& w, const io::SafetensorsFile& f) {
  if (w.integer("d_ff") != 4 * w.integer("d_model"))
    throw RuntimeUsageError("gpt workload: cannl's GPT-2 blocks need d_ff = 4 d_model");
  const nn::Gpt2Config config{.vocab_size = w.integer("vocab"), .n_positions = w.integer("seq"),
                              .n_embd = w.integer("d_model"), .n_layer = w.integer("n_layer"),
                              .n_head = w.integer("n_head"), .layer_norm_epsilon = w.number("ln_eps"),
                              // f32 sums like every peer's GEMMs (the f64 default serves HF parity)
                              .accumulate = ir::DType::F32};
  const nn::Gpt2Blocks model(config, "gpt");
  LossGraph g{{}, batch_symbol(w), {}};
  add_gpt_params(g, model);
  Tensor logits = model.logits(slice_batch(tokens_literal("ids", w, f), g.batch), config.n_positions);
  Tensor targets = nn::one_hot_of_ids(slice_batch(tokens_literal("targets", w, f), g.batch),
                                      config.vocab_size);
  g.loss = nn::cross_entropy_loss(logits, targets);
  return g;
}

void upload(runtime::Context& ctx, const io::SafetensorsFile& f, const std::string& name,
            const Tensor& param) {
  const io::TensorInfo& info = f.info(name);
  std::int64_t cells = 1;
  for (std::int64_t d : param.dims()) cells *= d;
  if (cells != info.num_elements())
    throw FormatError("fixture " + f.name() + ": tensor '" + name + "' has " +
                      std::to_string(info.num_elements()) + " elements, parameter " +
                      param.label() + " (" + param.shape_string() + ") has " + std::to_string(cells));
  if (info.dtype == io::SafetensorsDType::F32 && param.value()->dtype == ir::DType::F32)
    ctx.set_bytes(param.value(), f.raw_bytes(name));
  else
    ctx.set_values(param.value(), f.to_f64(name));
}

/// The workload's update rule: plain SGD (the default), or AdamW in PyTorch's formulation
/// (torch.optim.AdamW: decoupled decay, bias correction), decaying the parameters of at least
/// `weight_decay_min_rank` axes.
void choose_optimizer(const Workload& w, train::StepOptions& options) {
  const std::string optimizer = w.text_or("optimizer", "sgd");
  if (optimizer == "sgd") {
    options.sgd = {.lr = w.number("lr")};
    return;
  }
  if (optimizer != "adamw")
    throw RuntimeUsageError("workload " + w.text("name") + ": unknown optimizer '" + optimizer +
                            "' (sgd or adamw)");
  options.optimizer = train::Optimizer::AdamW;
  options.adam = {.schedule = {.lr = w.number("lr")},
                  .beta1 = w.number_or("beta1", 0.9),
                  .beta2 = w.number_or("beta2", 0.999),
                  .eps = w.number_or("eps", 1e-8),
                  .weight_decay = w.number_or("weight_decay", 0.01),
                  .decoupled = true,
                  .weight_decay_min_rank = static_cast<int>(w.number_or("weight_decay_min_rank", 0))};
}

}  // namespace

PrecisionPolicy workload_precision(const Workload& w) {
  return PrecisionPolicy::from_name(w.text_or("precision", "f32"), "workload precision");
}

LossGraph build_loss_graph(const Workload& w, const io::SafetensorsFile& fixture) {
  const std::string& model = w.text("model");
  if (model == "mlp") return mlp_graph(w, fixture);
  if (model == "conv") return conv_graph(w, fixture);
  if (model == "gpt") return gpt_graph(w, fixture);
  throw RuntimeUsageError("workload " + w.text("name") + ": unknown model '" + model + "'");
}

BenchCell::BenchCell(Workload workload, io::SafetensorsFile fixture, runtime::Context ctx, bool tune)
    : workload_(std::move(workload)), fixture_(std::move(fixture)), ctx_(std::move(ctx)), tune_(tune) {}

runtime::Routine BenchCell::compile_routine(runtime::Context& ctx, const ir::Comp& comp, const std::string& name) {
  if (keep_optimized_) {
    optimized_ = ctx.optimized_routine(comp, name);
    return ctx.compile(ir::Comp{.body = {}, .statics = comp.statics}, name + "_census_only");
  }
  if (!tune_) return ctx.compile(comp, name);
  tune_report_.emplace();
  return tune::tune(ctx, comp, name, tune::TuneOptions::from_config(), &*tune_report_);
}

void BenchCell::compile() {
  {
    // Every contraction of the model (and so of its backward) multiplies in the workload's
    // precision; parameters, gradients and the optimizer's state stay f32.
    const PrecisionScope precision(workload_precision(workload_));
    graph_ = build_loss_graph(workload_, fixture_);
  }
  const std::string name = workload_.text("name") + "_step";
  if (workload_.text("mode") == "train") {
    train::StepOptions options{.batch = graph_->batch, .n_batches = workload_.integer("n_batches"), .name = name};
    choose_optimizer(workload_, options);
    options.compile_step_routine = [this](runtime::Context& ctx, const ir::Comp& comp, const std::string& n) {
      return compile_routine(ctx, comp, n);
    };
    training_ = train::compile_step(ctx_, graph_->loss, options);
  } else {
    train::upload_literals(ctx_, {graph_->loss});
    forward_ = compile_routine(ctx_, cannl::forward_code({graph_->loss}), name);
  }
  // After compile_step's init routine: the fixture's values replace the random initialization.
  for (const auto& [name, param] : graph_->params) upload(ctx_, fixture_, name, param);
}

void BenchCell::step(std::int64_t k) {
  const std::int64_t batch[] = {k % workload_.integer("n_batches")};
  ctx_.run(training_ ? training_->step : forward_, batch);
}

double BenchCell::loss() const { return ctx_.get_value(graph_->loss.value(), 0); }

}  // namespace cannl::bench
