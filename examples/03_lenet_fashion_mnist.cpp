// Tutorial 3: LeNet-5 on Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 28x28 grey images of ten
// kinds of clothing, 60,000 to train on and 10,000 to test.
//
// The network is LeCun et al.'s LeNet-5 with today's habits (ReLU, max pooling):
//   conv 5x5, 6 channels, padded -> relu -> max pool 2   28x28x1 -> 14x14x6
//   conv 5x5, 16 channels        -> relu -> max pool 2   14x14x6 -> 5x5x16
//   dense 120 -> relu -> dense 84 -> relu -> dense 10
// Images are channels-last output axes (batch | h, w, c); the dense layer after the convolutions
// contracts all three axes at once, so nothing is flattened by hand.
//
// The data comes from Debian's `dataset-fashion-mnist` package (scripts/setup.sh installs it):
// gzip-compressed idx files, decompressed through `gzip -dc`.
//
// Run:  build/examples/example_03_lenet_fashion_mnist [--quick] [--epochs N] [--dataset-dir DIR]
// (DIR holding the four *-idx?-ubyte.gz files; default: the Debian package's folder).
// The last line reports the test accuracy.
#include <cannl/cannl.h>
#include <cannl/support/process.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "example_support.h"

using namespace cannl;

namespace {

constexpr const char* kDatasetDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kInstallHint =
    "Fashion-MNIST is not installed; install the Debian package dataset-fashion-mnist "
    "(apt-get install dataset-fashion-mnist, or run scripts/setup.sh)";
constexpr std::int64_t kSide = 28, kClasses = 10;
// Mean and standard deviation of the training pixels in [0, 1] (Fashion-MNIST's usual values).
constexpr double kPixelMean = 0.2860, kPixelStd = 0.3530;

// ---- idx files ----

/// The decompressed bytes of a .gz file, through the gzip program (present on every Debian).
std::string gunzip(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw examples::DataUnavailable("missing " + path + ": " + kInstallHint);
  // An argument vector, no shell: the path is never parsed as a command.
  auto gzip = process::capture({"gzip", "-dc", "--", path});
  if (!gzip.result.started) throw examples::DataUnavailable("cannot run gzip to read " + path);
  if (gzip.result.exit_status != 0) throw examples::DataUnavailable("gzip failed to decompress " + path);
  return std::move(gzip.output);
}

std::uint32_t big_endian_u32(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

/// The payload of an idx file (LeCun's MNIST format: magic 0x08 0x0N for N dims of unsigned
/// bytes, N big-endian sizes, then the data), checked against the expected dims.
std::string idx_payload(const std::string& path, const std::vector<std::uint32_t>& dims) {
  const std::string bytes = gunzip(path);
  const std::size_t header = 4 + 4 * dims.size();
  std::size_t expected = 1;
  for (auto d : dims) expected *= d;
  if (bytes.size() != header + expected || big_endian_u32(bytes, 0) != 0x800u + dims.size())
    throw examples::DataUnavailable(path + " is not an idx file of the expected size");
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (big_endian_u32(bytes, 4 + 4 * i) != dims[i])
      throw examples::DataUnavailable(path + ": unexpected dimension " + std::to_string(i));
  return bytes.substr(header);
}

struct Images {
  std::int64_t count = 0;
  std::vector<double> pixels;  // count x 28 x 28, normalized
  std::vector<int> labels;
};

/// The first `keep` images of a split ("train" or "t10k") of `total`.
Images load_split(const std::string& dir, const std::string& prefix, std::uint32_t total,
                  std::int64_t keep) {
  const std::string pixels =
      idx_payload(dir + "/" + prefix + "-images-idx3-ubyte.gz", {total, 28, 28});
  const std::string labels = idx_payload(dir + "/" + prefix + "-labels-idx1-ubyte.gz", {total});
  Images out;
  out.count = std::min<std::int64_t>(keep, total);
  const auto n_pixels = static_cast<std::size_t>(out.count * kSide * kSide);
  out.pixels.reserve(n_pixels);
  for (std::size_t i = 0; i < n_pixels; ++i)
    out.pixels.push_back((static_cast<unsigned char>(pixels[i]) / 255.0 - kPixelMean) / kPixelStd);
  for (std::int64_t i = 0; i < out.count; ++i)
    out.labels.push_back(static_cast<unsigned char>(labels[static_cast<std::size_t>(i)]));
  return out;
}

// ---- the model ----

struct LeNet5 {
  nn::Conv2d c1{"c1", {.in_channels = 1, .out_channels = 6, .kernel = 5, .padding = true}};
  nn::Conv2d c2{"c2", {.in_channels = 6, .out_channels = 16, .kernel = 5}};
  nn::MaxPool2d pool{{.window = 2}};
  nn::Linear f1{"f1", {120}}, f2{"f2", {84}}, f3{"f3", {kClasses}};

  /// images: batch [...], output [28, 28, 1] -> logits batch [...], output [10].
  Tensor operator()(const Tensor& images) const {
    const Tensor h = pool(relu(c2(pool(relu(c1(images))))));  // batch | 5, 5, 16
    return f3(relu(f2(relu(f1(h)))));
  }
};

Tensor images_literal(const std::string& name, const Images& data, std::int64_t n_batches,
                      std::int64_t batch_size) {
  const auto n = static_cast<std::ptrdiff_t>(n_batches * batch_size * kSide * kSide);
  return literal(name, {data.pixels.begin(), data.pixels.begin() + n},
                 {.batch = nn::Dims{n_batches, batch_size}, .output = nn::Dims{kSide, kSide, 1}});
}

Tensor labels_literal(const std::string& name, const Images& data, std::int64_t n_batches,
                      std::int64_t batch_size) {
  const auto n = static_cast<std::ptrdiff_t>(n_batches * batch_size);
  return nn::ids_literal(name, {data.labels.begin(), data.labels.begin() + n},
                         {n_batches, batch_size});
}

/// Test accuracy, evaluated in chunks so the activations of one chunk only are alive at a time.
double test_accuracy(runtime::Context& ctx, const LeNet5& net, const Images& test,
                     std::int64_t chunk) {
  const std::int64_t n_chunks = test.count / chunk;
  ir::StaticSymbol index{ir::fresh_symbol(), n_chunks, "test_chunk"};
  Tensor logits = net(slice_batch(images_literal("test_images", test, n_chunks, chunk), index));
  auto routine = train::compile_forward(ctx, {logits}, "test_logits");
  double correct = 0;
  for (std::int64_t i = 0; i < n_chunks; ++i) {
    const std::int64_t at[] = {i};
    ctx.run(routine, at);
    const std::vector<int> labels(test.labels.begin() + i * chunk,
                                  test.labels.begin() + (i + 1) * chunk);
    correct +=
        nn::accuracy(ctx.get_values(logits.value()), labels, kClasses) * static_cast<double>(chunk);
  }
  return correct / static_cast<double>(n_chunks * chunk);
}

int run(const examples::ExampleArgs& args) {
  if (args.quick) examples::use_quick_compile_settings();
  const std::int64_t batch_size = 64;
  const int epochs = args.epochs > 0 ? args.epochs : args.quick ? 1 : 6;
  const std::string dir = args.dataset_dir.empty() ? kDatasetDir : args.dataset_dir;
  const Images train_set = load_split(dir, "train", 60000, args.quick ? 64 * 30 : 60000);
  const Images test_set = load_split(dir, "t10k", 10000, args.quick ? 1000 : 10000);
  const std::int64_t n_batches = train_set.count / batch_size;
  std::printf("Fashion-MNIST: %lld training images in %lld batches of %lld, %lld test images%s\n",
              static_cast<long long>(train_set.count), static_cast<long long>(n_batches),
              static_cast<long long>(batch_size), static_cast<long long>(test_set.count),
              args.quick ? " (quick run)" : "");
  std::fflush(stdout);

  LeNet5 net;
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  Tensor x = slice_batch(images_literal("train_images", train_set, n_batches, batch_size), batch);
  Tensor y = slice_batch(labels_literal("train_labels", train_set, n_batches, batch_size), batch);
  Tensor loss = nn::cross_entropy_loss(net(x), nn::one_hot_of_ids(y, kClasses));
  // Adam with the learning rate annealed to a tenth along a cosine over the whole run.
  const nn::LrSchedule schedule{.kind = nn::ScheduleKind::Cosine,
                                .lr = 2e-3,
                                .total_steps = epochs * n_batches,
                                .min_lr = 2e-4};
  auto step = train::compile_step(runtime::Context::from_config(), loss,
                                  {.optimizer = train::Optimizer::Adam,
                                   .adam = {.schedule = schedule},
                                   .batch = batch,
                                   .n_batches = n_batches});
  train::fit(step, {.epochs = epochs, .on_epoch = [](const train::EpochReport& e) {
                      std::printf("epoch %d/%d: train loss %.4f (%.0f steps/s)\n", e.epoch,
                                  e.epochs, e.mean_loss, e.steps_per_second);
                      std::fflush(stdout);
                    }});
  const double accuracy = test_accuracy(step.ctx, net, test_set, args.quick ? 500 : 1000);
  std::printf("test accuracy: %.4f on %lld images (acceptance: >= 0.88 in the full run)\n",
              accuracy, static_cast<long long>(test_set.count));
  return accuracy >= (args.quick ? 0.3 : 0.88) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main("lenet", argc, argv, run);
}
