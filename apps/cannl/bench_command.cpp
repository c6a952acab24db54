// `cannl bench` (see bench_command.h).
#include "bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>

#include "cannl/cannl.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/memory_budget.h"
#include "cannl/tune/tune.h"
#include "demo_training.h"

namespace cannl::app {
namespace {

using Dims = std::vector<std::int64_t>;

/// Median wall time in milliseconds of `reps` calls of `fn`, after one untimed warm-up call.
double median_ms(int reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<double> gaussian(std::size_t n, unsigned seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> out(n);
  for (auto& x : out) x = dist(gen);
  return out;
}

/// ctx.compile(comp, name), or with --tune the tuner's pick, its report written to `out`.
runtime::Routine compile_routine(runtime::Context& ctx, const ir::Comp& comp, const std::string& name,
                                 const ParsedArgs& args, std::ostream& out) {
  if (!args.flag("tune")) return ctx.compile(comp, name);
  tune::TuneOptions options = tune::TuneOptions::from_config();
  int judged = 0;
  options.hooks.on_candidate = [&](const tune::CandidateResult& c) {
    ++judged;
    std::cerr << "[tune] " << judged << " " << c.label << ": "
              << (c.verdict == tune::Verdict::Measured ? std::to_string(c.ms) + " ms"
                  : c.verdict == tune::Verdict::WrongResult ? "wrong result" : "failed")
              << "\n";
  };
  tune::TuneReport report;
  runtime::Routine routine = tune::tune(ctx, comp, name, options, &report);
  out << tune::format_report(report);
  return routine;
}

int bench_matmul(const ParsedArgs& args, std::ostream& out) {
  const std::int64_t n = args.integer("n", 1024);
  const int reps = static_cast<int>(args.integer("reps", n <= 512 ? 20 : 7));
  // Host copies (doubles) of x and w, and x, w, y as f32 buffers: 28 n^2 bytes.
  memory::check_budget(28 * n * n, "bench matmul --n " + std::to_string(n));
  const auto size = static_cast<std::size_t>(n * n);
  // y[b, o] = sum_i w[o, i] x[b, i]: an n x n x n contraction, multiplying in the precision the
  // config key `precision` names (bf16 / f16 / tf32 operands, f32 accumulation and result).
  const PrecisionPolicy precision = current_precision_policy();
  Tensor x = literal("x", gaussian(size, 1, 1.0), {.batch = Dims{n}, .output = Dims{n}});
  Tensor w = literal("w", gaussian(size, 2, 1.0), {.input = Dims{n}, .output = Dims{n}});
  Tensor y = w * x;
  auto ctx = runtime::Context::from_config();
  train::upload_literals(ctx, {y});
  auto routine = compile_routine(ctx, forward_code({y}), "bench_matmul", args, out);
  const double ms = median_ms(reps, [&] {
    ctx.run(routine);
    ctx.synchronize();
  });
  const double gflops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / (ms * 1e6);
  char line[192];
  std::snprintf(line, sizeof line, "matmul n %lld threads %s backend %s precision %s: median %.3f ms of %d runs\n",
                static_cast<long long>(n), config::get("cc_threads").c_str(),
                std::string(ctx.backend_name()).c_str(), std::string(precision.name()).c_str(), ms, reps);
  out << line;
  std::snprintf(line, sizeof line, "GFLOP/s %.2f\n", gflops);
  out << line;
  return 0;
}

/// mlp_wide's loss over `n_batches` batches of `batch` rows (micro-batches of a data-parallel run).
Tensor mlp_wide_loss(const ir::StaticSymbol& batch, std::int64_t n_batches, std::int64_t rows) {
  constexpr std::int64_t kClasses = 10;
  const Dims dims{256, 1024, 1024, kClasses};
  const auto samples = static_cast<std::size_t>(rows * n_batches);
  std::vector<double> onehot(samples * kClasses, 0.0);
  std::mt19937 gen(3);
  for (std::size_t s = 0; s < samples; ++s) onehot[s * kClasses + gen() % kClasses] = 1.0;
  Tensor x = literal("x", gaussian(samples * 256, 4, 1.0), {.batch = Dims{n_batches, rows}, .output = Dims{256}});
  Tensor y = literal("y", onehot, {.batch = Dims{n_batches, rows}, .output = Dims{kClasses}});
  Tensor h = slice_batch(x, batch);
  for (std::size_t i = 1; i < dims.size(); ++i) {
    nn::Linear layer("l" + std::to_string(i - 1), Dims{dims[i]});
    h = layer(h);
    if (i + 1 < dims.size()) h = relu(h);
  }
  return nn::cross_entropy_loss(h, slice_batch(y, batch));
}

/// mlp_wide data-parallel: the global batch of 256 split over --devices x processes replicas;
/// rank 0 prints the median global step and global steps/s.
int bench_mlp_data_parallel(const ParsedArgs& args, std::ostream& out) {
  constexpr std::int64_t kBatch = 256, kBatches = 16;
  if (args.has("tune")) throw RuntimeUsageError("cannl bench mlp: --tune works on one device only");
  DemoOptions options;
  options.devices = static_cast<int>(args.integer("devices", 1));
  options.distributed = args.flag("distributed");
  const DemoTraining training = demo_training(options);
  return run_distributed_safely(training, [&] {
    const int steps = static_cast<int>(args.integer("steps", 20));
    const std::int64_t micro = training.micro_batch(kBatch);
    const std::int64_t n_batches = kBatches * training.replicas();
    ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
    Tensor loss = mlp_wide_loss(batch, n_batches, micro);
    auto step = training.compile(loss, {.sgd = {.lr = 0.01}, .batch = batch, .n_batches = n_batches});
    std::int64_t k = 0;
    const double ms = median_ms(steps, [&] {
      step.parallel->run_step(k++ % step.n_batches);
      for (auto& r : step.parallel->local) r.ctx.synchronize();
    });
    if (!training.is_rank0()) return 0;
    char line[240];
    std::snprintf(line, sizeof line, "mlp_wide data-parallel threads %s: %s: median of %d global steps\n",
                  config::get("cc_threads").c_str(), training.describe(kBatch).c_str(), steps);
    out << line;
    std::snprintf(line, sizeof line, "global_steps_per_s %.2f\nstep_ms %.3f\n", 1000.0 / ms, ms);
    out << line;
    return 0;
  });
}

int bench_mlp(const ParsedArgs& args, std::ostream& out) {
  if (args.integer("devices", 1) > 1 || args.flag("distributed")) return bench_mlp_data_parallel(args, out);
  // mlp_wide: dims [256, 1024, 1024, 10], batch 256, 16 batches, lr 0.01 (reference 10.2).
  constexpr std::int64_t kBatch = 256, kBatches = 16;
  const int steps = static_cast<int>(args.integer("steps", 20));
  ir::StaticSymbol batch{ir::fresh_symbol(), kBatches, "batch"};
  Tensor loss = mlp_wide_loss(batch, kBatches, kBatch);
  auto ctx = runtime::Context::from_config();
  train::StepOptions step_options{.sgd = {.lr = 0.01}, .batch = batch, .n_batches = kBatches};
  step_options.compile_step_routine = [&](runtime::Context& c, const ir::Comp& comp, const std::string& name) {
    return compile_routine(c, comp, name, args, out);
  };
  auto step = train::compile_step(ctx, loss, step_options);
  std::int64_t k = 0;
  const double ms = median_ms(steps, [&] {
    const std::int64_t b[] = {k++ % kBatches};
    step.ctx.run(step.step, b);
    step.ctx.synchronize();
  });
  char line[160];
  std::snprintf(line, sizeof line, "mlp_wide train step threads %s backend %s: median of %d steps, loss %.6f\n",
                config::get("cc_threads").c_str(), std::string(step.ctx.backend_name()).c_str(), steps,
                step.ctx.get_value(loss.value(), 0));
  out << line;
  std::snprintf(line, sizeof line, "step_ms %.3f\n", ms);
  out << line;
  return 0;
}

OptionSpec threads_option() {
  return {.name = "threads", .kind = OptionKind::Int, .value_name = "T",
          .help = "sets cc_threads (0: the OpenMP default)", .min = 0, .max = 4096};
}

OptionSpec tune_option() {
  return {.name = "tune", .kind = OptionKind::Flag,
          .help = "search schedules first (autotune_* config keys) and time the winner; prints the serial, "
                  "default and tuned times and the winner's trace"};
}

}  // namespace

const CommandSpec& bench_matmul_spec() {
  static const CommandSpec spec{
      .name = "bench matmul",
      .summary = "Time an N x N x N f32 matmul through the compile path (operands in the config key "
                 "`precision`: f32, tf32, bf16, f16; backend: `backend`); last line: GFLOP/s <x>.",
      .options = {{.name = "n", .kind = OptionKind::Int, .value_name = "N",
                   .help = "matrix size (default 1024)", .min = 1, .max = 16384},
                  threads_option(), tune_option(),
                  {.name = "reps", .kind = OptionKind::Int, .value_name = "R",
                   .help = "timed runs (default 20, 7 above n 512)", .min = 1, .max = 100000}}};
  return spec;
}

const CommandSpec& bench_mlp_spec() {
  static const CommandSpec spec{
      .name = "bench mlp",
      .summary = "Time one SGD step of mlp_wide (256 -> 1024 -> 1024 -> 10, batch 256); last line: step_ms <x>.",
      .options = {threads_option(), tune_option(),
                  {.name = "steps", .kind = OptionKind::Int, .value_name = "S",
                   .help = "timed steps (default 20)", .min = 1, .max = 100000},
                  {.name = "devices", .kind = OptionKind::Int, .value_name = "N",
                   .help = "data-parallel on N CPU devices (the batch of 256 split; prints global_steps_per_s)",
                   .min = 1, .max = 64},
                  {.name = "distributed", .kind = OptionKind::Flag,
                   .help = "data-parallel over the MPI processes (mpirun -np P)"}}};
  return spec;
}

namespace {

CommandSpec as_tune_command(const CommandSpec& bench, const std::string& kind) {
  CommandSpec spec = bench;
  spec.name = "tune " + kind;
  spec.summary = "Search schedules for the routine of `cannl bench " + kind +
                 "` (autotune_* config keys), print serial / default / tuned times and the winner's trace, then "
                 "time it like the bench.";
  std::erase_if(spec.options, [](const OptionSpec& o) {
    return o.name == "tune" || o.name == "devices" || o.name == "distributed";  // the tuner searches one device
  });
  return spec;
}

}  // namespace

const CommandSpec& tune_matmul_spec() {
  static const CommandSpec spec = as_tune_command(bench_matmul_spec(), "matmul");
  return spec;
}

const CommandSpec& tune_mlp_spec() {
  static const CommandSpec spec = as_tune_command(bench_mlp_spec(), "mlp");
  return spec;
}

int run_bench_command(const std::string& which, const ParsedArgs& args, std::ostream& out) {
  if (args.has("threads")) config::set_override("cc_threads", args.text("threads"));
  return which == "matmul" ? bench_matmul(args, out) : bench_mlp(args, out);
}

}  // namespace cannl::app
