// `cannl demo`: the main job. Trains an MLP (2 -> 64 -> 64 -> 2, relu) on 1024 half-moons points
// with SGD on the C backend, prints progress and the final train accuracy, and writes a loss
// curve and a decision-boundary picture next to the generated C under build_files/<exe>/.
// --devices N and --distributed train it data-parallel (demo_training.h); --model makemore
// trains the makemore MLP instead.
#include "demo.h"

#include <cstdio>
#include <iostream>

#include "cannl/backends/cc_backend.h"
#include "cannl/cannl.h"
#include "cannl/support/files.h"
#include "demo_training.h"
#include "plots.h"

namespace cannl::app {
namespace {

constexpr std::int64_t kSamples = 1024;
constexpr std::int64_t kBatch = 64;
constexpr int kGrid = 80;  // decision-boundary picture resolution

struct Mlp {
  Tensor w1 = param("w1", {.output = std::vector<std::int64_t>{64}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = std::vector<std::int64_t>{64}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  Tensor w3 = param("w3", {.output = std::vector<std::int64_t>{2}, .init = {.kind = InitKind::Kaiming}});
  Tensor b3 = param("b3", {.init = {.kind = InitKind::Constant}});

  Tensor operator()(const Tensor& x) const {
    Tensor h1 = relu(w1 * x + b1);
    Tensor h2 = relu(w2 * h1 + b2);
    return w3 * h2 + b3;
  }
};

/// Grid points covering the data, row-major (y outer, x inner).
std::vector<double> grid_points(double x0, double x1, double y0, double y1) {
  std::vector<double> points;
  for (int j = 0; j < kGrid; ++j)
    for (int i = 0; i < kGrid; ++i) {
      points.push_back(x0 + (x1 - x0) * i / (kGrid - 1));
      points.push_back(y0 + (y1 - y0) * j / (kGrid - 1));
    }
  return points;
}

}  // namespace

const CommandSpec& demo_command_spec() {
  static const CommandSpec spec{
      .name = "demo",
      .summary = "Train an MLP (2 -> 64 -> 64 -> 2, relu) on 1024 half-moons points with SGD on the C\n"
                 "backend; prints the loss, the final train accuracy and writes two pictures.",
      .options = {{.name = "epochs", .kind = OptionKind::Int, .value_name = "N",
                   .help = "training epochs (default 40)", .min = 1, .max = 100000},
                  {.name = "lr", .kind = OptionKind::Number, .value_name = "X",
                   .help = "SGD learning rate of the moons MLP (default 0.1)", .min_number = 0, .max_number = 100,
                   .exclusive_min = true},
                  {.name = "model", .kind = OptionKind::Choice, .value_name = "NAME",
                   .help = "moons (default) or makemore (the makemore MLP on --data)",
                   .choices = {"moons", "makemore"}},
                  {.name = "devices", .kind = OptionKind::Int, .value_name = "N",
                   .help = "train data-parallel on N CPU devices (worker threads with FIFO queues;\n"
                           "the global batch is split between them; default 1); with --backend=cuda\n"
                           "on N GPUs (config cuda_devices, else 0..N-1; NCCL averages the gradients),\n"
                           "with --backend=opencl on devices 0..N-1 of the platform",
                   .min = 1, .max = 64},
                  {.name = "distributed", .kind = OptionKind::Flag,
                   .help = "one replica per MPI process (run under mpirun -np P); gradients summed by\n"
                           "MPI_Allreduce; a dead or hung rank stops the others after\n"
                           "distributed_timeout_s seconds"},
                  {.name = "checkpoint", .kind = OptionKind::Text, .value_name = "FILE",
                   .help = "write parameters and optimizer state there after every epoch (rank 0,\n"
                           "atomically)"},
                  {.name = "resume", .kind = OptionKind::Flag,
                   .help = "continue the run saved in --checkpoint (every rank reads it)"},
                  {.name = "data", .kind = OptionKind::Text, .value_name = "FILE",
                   .help = "names for --model makemore (default data/names/first-names-en.txt)"}}};
  return spec;
}

DemoOptions demo_options(const ParsedArgs& args) {
  DemoOptions options;
  options.epochs = static_cast<int>(args.integer("epochs", options.epochs));
  options.lr = args.number("lr", options.lr);
  options.model = args.text("model", options.model);
  options.devices = static_cast<int>(args.integer("devices", options.devices));
  options.distributed = args.flag("distributed");
  options.checkpoint = args.text("checkpoint", options.checkpoint);
  options.resume = args.flag("resume");
  options.data = args.text("data", options.data);
  if (!args.has("epochs") && options.model == "makemore") options.epochs = 10;
  return options;
}

namespace {

int run_moons_demo(const DemoOptions& options) {
  const DemoTraining training = demo_training(options);
  return run_distributed_safely(training, [&] {
  const auto data = datasets::moons({.samples = kSamples, .noise = 0.1, .seed = 42});
  // Each replica's loss covers its share of the global batch: micro-batches of kBatch / R rows.
  const std::int64_t micro = training.micro_batch(kBatch);
  const std::int64_t n_batches = kSamples / micro;
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};

  Tensor x_all = literal("moons_x", data.features, {.batch = std::vector<std::int64_t>{n_batches, micro}, .output = std::vector<std::int64_t>{2}});
  Tensor y_all = literal("moons_y", data.one_hot(), {.batch = std::vector<std::int64_t>{n_batches, micro}, .output = std::vector<std::int64_t>{2}});
  Mlp mlp;
  Tensor loss = nn::cross_entropy(mlp(slice_batch(x_all, batch)), slice_batch(y_all, batch));

  if (training.is_rank0())
    std::cout << "cannl demo: MLP 2 -> 64 -> 64 -> 2 on " << kSamples << " half-moons points, "
              << training.describe(kBatch) << ", SGD lr " << options.lr << " momentum 0.9, backend "
              << training.ctx.backend_name() << "\n";
  auto step = training.compile(loss, {.sgd = {.lr = options.lr, .momentum = 0.9}, .batch = batch, .n_batches = n_batches});
  std::vector<double> curve = training.fit(step, options, [&](const train::EpochReport& r) {
    if (r.epoch % 5 == 0 || r.epoch == 1 || r.epoch == r.epochs)
      std::printf("epoch %3d/%d  loss %.6f  %.0f %ssteps/s\n", r.epoch, r.epochs, r.mean_loss,
                  r.steps_per_second, step.parallel ? "global " : "");
    std::fflush(stdout);
  });
  if (!training.is_rank0()) return 0;  // the replicas are equal: rank 0 evaluates and draws

  Tensor x_eval = literal("moons_eval_x", data.features, {.batch = std::vector<std::int64_t>{kSamples}, .output = std::vector<std::int64_t>{2}});
  Tensor logits = mlp(x_eval);
  auto eval = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(eval);
  const double acc = nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2);

  const auto grid = grid_points(-1.5, 2.5, -1.0, 1.5);
  Tensor x_grid = literal("grid_x", grid, {.batch = std::vector<std::int64_t>{kGrid * kGrid}, .output = std::vector<std::int64_t>{2}});
  Tensor grid_logits = mlp(x_grid);
  auto classify = train::compile_forward(step.ctx, {grid_logits}, "classify_grid");
  step.ctx.run(classify);
  write_plots({curve, data, grid, step.ctx.get_values(grid_logits.value()), kGrid,
               files::build_dir()});
  std::printf("compiler invocations: %d (routines found in the compile cache need none)\n",
              backends::cc::compiler_invocations());
  std::printf("final train accuracy: %.4f\n", acc);
  return 0;
  });
}

}  // namespace

int run_demo(const DemoOptions& options) {
  if (options.model == "makemore") return run_makemore_demo(options);
  return run_moons_demo(options);
}

}  // namespace cannl::app
