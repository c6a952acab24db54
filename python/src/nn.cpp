// cannl::nn: blocks with parameters, parameter-free functions, losses, fused ops, positions and
// the seeded datasets. Blocks create their parameters when constructed and are called like
// functions; options are keyword arguments named as the C++ option fields.
//
//   fc = cannl.nn.Linear("fc", [16])
//   y = fc(cannl.nn.gelu(cannl.nn.LayerNorm("ln1")(x)))
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cannl/nn/blocks.h"
#include "cannl/nn/datasets.h"
#include "cannl/nn/functional.h"
#include "cannl/nn/losses.h"
#include "cannl/nn/ops.h"
#include "cannl/nn/positions.h"

namespace cannl::python {
namespace {

using Dims = std::vector<std::int64_t>;
using OptDType = std::optional<ir::DType>;

void bind_dense_blocks(nb::module_& m) {
  nb::class_<nn::Linear>(m, "Linear", "w * x + b; w's output is out_dims, its input inferred from x.\n"
                                      "  fc = cannl.nn.Linear(\"fc\", [16]);  y = fc(x)")
      .def(nb::init<const std::string&, Dims, bool>(), nb::arg("label"), nb::arg("out_dims"),
           nb::arg("bias") = true, kLocked)
      .def("__call__", &nn::Linear::operator(), nb::arg("x"), kLocked)
      .def_rw("w", &nn::Linear::w)
      .def_rw("b", &nn::Linear::b)
      .def_rw("accumulate", &nn::Linear::accumulate);
  nb::class_<nn::Mlp>(m, "Mlp", "relu(w_k * h + b_k) per hidden size, then w_out * h (+ b_out).")
      .def("__init__", [](nn::Mlp* self, const std::string& label, Dims hidden, Dims out, bool output_bias) {
             new (self) nn::Mlp(label, {std::move(hidden), std::move(out), output_bias});
           }, nb::arg("label"), nb::kw_only(), nb::arg("hidden"), nb::arg("out"),
           nb::arg("output_bias") = false, kLocked)
      .def("__call__", &nn::Mlp::operator(), nb::arg("x"), kLocked)
      .def_rw("layers", &nn::Mlp::layers);
  nb::class_<nn::LayerNorm>(m, "LayerNorm", "LayerNorm over the output axes (PyTorch semantics).")
      .def("__init__", [](nn::LayerNorm* self, const std::string& label, double eps, bool affine, OptDType acc) {
             new (self) nn::LayerNorm(label, {eps, affine, acc});
           }, nb::arg("label"), nb::kw_only(), nb::arg("eps") = 1e-5, nb::arg("affine") = true,
           nb::arg("accumulate") = nb::none(), kLocked)
      .def("__call__", &nn::LayerNorm::operator(), nb::arg("x"), kLocked)
      .def_rw("gamma", &nn::LayerNorm::gamma)
      .def_rw("beta", &nn::LayerNorm::beta);
  nb::class_<nn::Embedding>(m, "Embedding", "A table [dim <- vocab] applied to one-hot ids.")
      .def(nb::init<const std::string&, std::int64_t, std::int64_t>(), nb::arg("label"), nb::arg("vocab"),
           nb::arg("dim"), kLocked)
      .def("__call__", &nn::Embedding::operator(), nb::arg("one_hot"), kLocked)
      .def_rw("table", &nn::Embedding::table);
}

void bind_batch_norm(nb::module_& m) {
  nb::enum_<nn::Mode>(m, "Mode", "Batch statistics (Train) or running ones (Eval).")
      .value("Train", nn::Mode::Train).value("Eval", nn::Mode::Eval);
  nb::class_<nn::BatchNorm>(m, "BatchNorm", "Base of BatchNorm1d / BatchNorm2d.")
      .def("__call__", &nn::BatchNorm::operator(), nb::arg("x"), nb::arg("mode") = nn::Mode::Train, kLocked)
      .def_rw("gamma", &nn::BatchNorm::gamma)
      .def_rw("beta", &nn::BatchNorm::beta)
      .def_rw("running_mean", &nn::BatchNorm::running_mean)
      .def_rw("running_var", &nn::BatchNorm::running_var);
  auto init_with = [](auto* self, const std::string& label, std::int64_t n, double eps, double momentum,
                      bool affine) {
    using Block = std::remove_pointer_t<decltype(self)>;
    new (self) Block(label, {n, eps, momentum, affine});
  };
  nb::class_<nn::BatchNorm1d, nn::BatchNorm>(m, "BatchNorm1d", "BatchNorm over batch | features.")
      .def("__init__", [init_with](nn::BatchNorm1d* self, const std::string& label, std::int64_t n, double eps,
                                   double momentum, bool affine) { init_with(self, label, n, eps, momentum, affine); },
           nb::arg("label"), nb::kw_only(), nb::arg("num_features"), nb::arg("eps") = 1e-5,
           nb::arg("momentum") = 0.1, nb::arg("affine") = true, kLocked);
  nb::class_<nn::BatchNorm2d, nn::BatchNorm>(m, "BatchNorm2d", "BatchNorm over batch | h, w, channels.")
      .def("__init__", [init_with](nn::BatchNorm2d* self, const std::string& label, std::int64_t n, double eps,
                                   double momentum, bool affine) { init_with(self, label, n, eps, momentum, affine); },
           nb::arg("label"), nb::kw_only(), nb::arg("num_features"), nb::arg("eps") = 1e-5,
           nb::arg("momentum") = 0.1, nb::arg("affine") = true, kLocked);
}

void bind_attention(nb::module_& m) {
  nb::class_<nn::RopeOptions>(m, "RopeOptions", "Rotary positions: RopeOptions(seq_len=16, head_dim=8).")
      .def("__init__", [](nn::RopeOptions* self, std::int64_t seq_len, std::int64_t head_dim, double base) {
             new (self) nn::RopeOptions{seq_len, head_dim, base};
           }, nb::kw_only(), nb::arg("seq_len"), nb::arg("head_dim") = 0, nb::arg("base") = 10000.0);
  nb::class_<nn::MultiHeadAttention>(m, "MultiHeadAttention", "Multi-head self-attention over a sequence batch axis.")
      .def("__init__", [](nn::MultiHeadAttention* self, const std::string& label, std::int64_t heads,
                          std::int64_t d_k, std::int64_t d_v, std::int64_t d_model, bool bias,
                          std::optional<nn::RopeOptions> rope) {
             new (self) nn::MultiHeadAttention(label, {heads, d_k, d_v, d_model, bias, rope});
           }, nb::arg("label"), nb::kw_only(), nb::arg("heads") = 1, nb::arg("d_k"), nb::arg("d_v") = 0,
           nb::arg("d_model"), nb::arg("bias") = true, nb::arg("rope") = nb::none(), kLocked)
      .def("__call__", &nn::MultiHeadAttention::operator(), nb::arg("x"), nb::arg("mask") = nb::none(), kLocked);
  nb::class_<nn::DecoderBlock>(m, "DecoderBlock", "Pre-LN transformer decoder block (GPT-2).")
      .def("__init__", [](nn::DecoderBlock* self, const std::string& label, std::int64_t heads,
                          std::int64_t d_model, std::int64_t d_ff, double ln_eps) {
             new (self) nn::DecoderBlock(label, {heads, d_model, d_ff, ln_eps});
           }, nb::arg("label"), nb::kw_only(), nb::arg("heads") = 1, nb::arg("d_model"), nb::arg("d_ff") = 0,
           nb::arg("ln_eps") = 1e-5, kLocked)
      .def("__call__", &nn::DecoderBlock::operator(), nb::arg("x"), nb::arg("mask"), kLocked);
  nb::class_<nn::DecoderLm>(m, "DecoderLm", "A decoder-only language model over token ids.")
      .def("__init__", [](nn::DecoderLm* self, const std::string& label, std::int64_t vocab, std::int64_t window,
                          std::int64_t d_model, std::int64_t layers, std::int64_t heads, double embedding_stddev) {
             new (self) nn::DecoderLm(label, {vocab, window, d_model, layers, heads, embedding_stddev});
           }, nb::arg("label"), nb::kw_only(), nb::arg("vocab"), nb::arg("window"), nb::arg("d_model"),
           nb::arg("layers") = 1, nb::arg("heads") = 1, nb::arg("embedding_stddev") = 0.1, kLocked)
      .def("logits", &nn::DecoderLm::logits, nb::arg("ids"), kLocked);
  nb::class_<nn::LearnedPositions>(m, "LearnedPositions", "Learned absolute positions (GPT-2's wpe).")
      .def(nb::init<const std::string&, std::int64_t, std::int64_t>(), nb::arg("label"), nb::arg("max_len"),
           nb::arg("dim"), kLocked)
      .def("__call__", &nn::LearnedPositions::operator(), nb::arg("seq_len"), kLocked)
      .def_rw("table", &nn::LearnedPositions::table);
}

void bind_conv_blocks(nb::module_& m) {
  auto options = [](std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                    std::int64_t dilation, bool padding, bool bias) {
    return nn::Conv2dOptions{in, out, kernel, stride, dilation, padding, bias};
  };
  nb::class_<nn::Conv2d>(m, "Conv2d", "2-D convolution with bias over batch | h, w, channels.")
      .def("__init__", [options](nn::Conv2d* self, const std::string& label, std::int64_t in, std::int64_t out,
                                 std::int64_t kernel, std::int64_t stride, std::int64_t dilation, bool padding,
                                 bool bias) {
             new (self) nn::Conv2d(label, options(in, out, kernel, stride, dilation, padding, bias));
           }, nb::arg("label"), nb::kw_only(), nb::arg("in_channels"), nb::arg("out_channels"),
           nb::arg("kernel") = 3, nb::arg("stride") = 1, nb::arg("dilation") = 1, nb::arg("padding") = false,
           nb::arg("bias") = true, kLocked)
      .def("__call__", &nn::Conv2d::operator(), nb::arg("x"), kLocked)
      .def_rw("w", &nn::Conv2d::w)
      .def_rw("b", &nn::Conv2d::b);
  nb::class_<nn::DepthwiseSeparableConv2d>(m, "DepthwiseSeparableConv2d", "Depthwise then pointwise convolution.")
      .def("__init__", [options](nn::DepthwiseSeparableConv2d* self, const std::string& label, std::int64_t in,
                                 std::int64_t out, std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                                 bool padding, bool bias) {
             new (self) nn::DepthwiseSeparableConv2d(label, options(in, out, kernel, stride, dilation, padding, bias));
           }, nb::arg("label"), nb::kw_only(), nb::arg("in_channels"), nb::arg("out_channels"),
           nb::arg("kernel") = 3, nb::arg("stride") = 1, nb::arg("dilation") = 1, nb::arg("padding") = false,
           nb::arg("bias") = true, kLocked)
      .def("__call__", &nn::DepthwiseSeparableConv2d::operator(), nb::arg("x"), kLocked);
  nb::class_<nn::MaxPool2d>(m, "MaxPool2d", "Max over window x window cells per channel.")
      .def("__init__", [](nn::MaxPool2d* self, std::int64_t window, std::int64_t stride) {
             new (self) nn::MaxPool2d({window, stride});
           }, nb::kw_only(), nb::arg("window") = 2, nb::arg("stride") = 0, kLocked)
      .def("__call__", &nn::MaxPool2d::operator(), nb::arg("x"), kLocked);
  nb::class_<nn::AvgPool2d>(m, "AvgPool2d", "Mean over window x window cells per channel.")
      .def("__init__", [](nn::AvgPool2d* self, std::int64_t window, std::int64_t stride) {
             new (self) nn::AvgPool2d({window, stride});
           }, nb::kw_only(), nb::arg("window") = 2, nb::arg("stride") = 0, kLocked)
      .def("__call__", &nn::AvgPool2d::operator(), nb::arg("x"), kLocked);
}

void bind_functional(nb::module_& m) {
  m.attr("OVER_OUTPUTS") = nn::kOverOutputs;
  m.def("gelu", &nn::gelu, nb::arg("x"), kLocked, "GELU, tanh approximation.");
  m.def("softmax", &nn::softmax, nb::arg("x"), nb::arg("reduce_spec") = nn::kOverOutputs, kLocked,
        "Softmax over the axes reduce_spec reduces (default: every output axis).");
  m.def("log_softmax", &nn::log_softmax, nb::arg("x"), nb::arg("reduce_spec") = nn::kOverOutputs, kLocked);
  m.def("cross_entropy", &nn::cross_entropy, nb::arg("logits"), nb::arg("targets"), kLocked,
        "Softmax cross-entropy from logits and one-hot targets, averaged over the rows.");
  m.def("cross_entropy_loss",
        [](const Tensor& logits, const Tensor& targets, std::optional<Tensor> mask, std::optional<double> by) {
          return nn::cross_entropy_loss(logits, targets, {mask, by});
        }, nb::arg("logits"), nb::arg("targets"), nb::kw_only(), nb::arg("mask") = nb::none(),
        nb::arg("normalize_by") = nb::none(), kLocked, "The fused cross-entropy loss (a scalar).");
  m.def("one_hot_of_ids", &nn::one_hot_of_ids, nb::arg("ids"), nb::arg("num_classes"), kLocked);
  m.def("ids_literal", &nn::ids_literal, nb::arg("name"), nb::arg("ids"), nb::arg("batch_dims") = Dims{}, kLocked,
        "Host literal of token ids: batch [len(ids)] (or batch_dims), no output axes.");
  m.def("causal_mask", &nn::causal_mask, nb::arg("seq_len"), kLocked);
  m.def("position_one_hot", &nn::position_one_hot, nb::arg("seq_len"), nb::arg("max_len"), kLocked);
  m.def("dropout",
        [](const Tensor& x, const ir::StaticSymbol& step, double rate, bool training, const std::string& stream) {
          return nn::dropout(x, step, {rate, training, stream});
        }, nb::arg("x"), nb::arg("step"), nb::kw_only(), nb::arg("rate") = 0.0, nb::arg("training") = true,
        nb::arg("stream") = "dropout", kLocked, "Inverted dropout keyed by the step symbol and the training steps done (fresh masks every step of fit).");
  m.def("sinusoidal_positions", &nn::sinusoidal_positions, nb::arg("seq_len"), nb::arg("d_model"), kLocked);
  m.def("rope", &nn::rope, nb::arg("x"), nb::arg("options"), kLocked, "Rotary position embedding.");
  m.def("accuracy",
        [](nb::ndarray<const double, nb::c_contig, nb::device::cpu> logits, const std::vector<int>& labels,
           int num_classes) {
          const std::vector<double> values(logits.data(), logits.data() + logits.size());
          return nn::accuracy(values, labels, num_classes);
        }, nb::arg("logits"), nb::arg("labels"), nb::arg("num_classes"), kLocked,
        "Fraction of rows whose arg-max over num_classes logits equals the label.");
}

void bind_datasets(nb::module_& m) {
  nb::class_<datasets::Dataset>(m, "Dataset", "A seeded synthetic dataset.")
      .def_ro("samples", &datasets::Dataset::samples)
      .def_ro("num_features", &datasets::Dataset::num_features)
      .def_ro("num_classes", &datasets::Dataset::num_classes)
      .def_prop_ro("features", [](const datasets::Dataset& d) { return d.features; },
                   "samples x num_features values, row-major (a flat list).")
      .def_ro("labels", &datasets::Dataset::labels)
      .def("one_hot", &datasets::Dataset::one_hot, "One-hot labels, samples x num_classes (flat).");
  m.def("moons", [](std::int64_t samples, double noise, std::uint64_t seed) {
          return datasets::moons({samples, noise, seed});
        }, nb::kw_only(), nb::arg("samples") = 1024, nb::arg("noise") = 0.1, nb::arg("seed") = 42, kLocked,
        "Two interleaving half circles with Gaussian noise, shuffled.");
  m.def("circles", [](std::int64_t samples, double noise, double factor, std::uint64_t seed) {
          return datasets::circles({samples, noise, factor, seed});
        }, nb::kw_only(), nb::arg("samples") = 1024, nb::arg("noise") = 0.05, nb::arg("factor") = 0.5,
        nb::arg("seed") = 42, kLocked, "Two concentric circles with Gaussian noise, shuffled.");
}

}  // namespace

void bind_nn(nb::module_& m) {
  bind_dense_blocks(m);
  bind_batch_norm(m);
  bind_attention(m);
  bind_conv_blocks(m);
  bind_functional(m);
  bind_datasets(m);
}

}  // namespace cannl::python
