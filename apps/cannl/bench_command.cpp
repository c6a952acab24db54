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

namespace cannl::app {
namespace {

using Dims = std::vector<std::int64_t>;

/// Value of `--name N` / `--name=N` in args, or `fallback`.
std::string option(const std::vector<std::string>& args, const std::string& name, const std::string& fallback) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" + name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--" + name + "=", 0) == 0) return args[i].substr(name.size() + 3);
  }
  return fallback;
}

int positive(const std::vector<std::string>& args, const std::string& name, const std::string& fallback) {
  const std::string text = option(args, name, fallback);
  int value = 0;
  try {
    value = std::stoi(text);
  } catch (const std::exception&) {
    throw RuntimeUsageError("--" + name + " expects a number, got '" + text + "'");
  }
  if (value < (name == "threads" ? 0 : 1)) {
    throw RuntimeUsageError("--" + name + " must be " + (name == "threads" ? ">= 0" : ">= 1") + ", got " + text);
  }
  return value;
}

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

int bench_matmul(const std::vector<std::string>& args, std::ostream& out) {
  const std::int64_t n = positive(args, "n", "1024");
  const int reps = positive(args, "reps", n <= 512 ? "20" : "7");
  const auto size = static_cast<std::size_t>(n * n);
  // y[b, o] = sum_i w[o, i] x[b, i]: an n x n x n contraction.
  Tensor x = literal("x", gaussian(size, 1, 1.0), {.batch = Dims{n}, .output = Dims{n}});
  Tensor w = literal("w", gaussian(size, 2, 1.0), {.input = Dims{n}, .output = Dims{n}});
  Tensor y = w * x;
  auto ctx = runtime::Context::from_config();
  train::upload_literals(ctx, {y});
  auto routine = train::compile_forward(ctx, {y}, "bench_matmul");
  const double ms = median_ms(reps, [&] { ctx.run(routine); });
  const double gflops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / (ms * 1e6);
  char line[128];
  std::snprintf(line, sizeof line, "matmul n %lld threads %s backend %s: median %.3f ms of %d runs\n",
                static_cast<long long>(n), config::get("cc_threads").c_str(),
                std::string(ctx.backend_name()).c_str(), ms, reps);
  out << line;
  std::snprintf(line, sizeof line, "GFLOP/s %.2f\n", gflops);
  out << line;
  return 0;
}

int bench_mlp(const std::vector<std::string>& args, std::ostream& out) {
  // mlp_wide: dims [256, 1024, 1024, 10], batch 256, 16 batches, lr 0.01 (reference 10.2).
  constexpr std::int64_t kBatch = 256, kBatches = 16, kClasses = 10;
  const Dims dims{256, 1024, 1024, kClasses};
  const int steps = positive(args, "steps", "20");
  ir::StaticSymbol batch{ir::fresh_symbol(), kBatches, "batch"};
  const auto samples = static_cast<std::size_t>(kBatch * kBatches);
  std::vector<double> onehot(samples * kClasses, 0.0);
  std::mt19937 gen(3);
  for (std::size_t s = 0; s < samples; ++s) onehot[s * kClasses + gen() % kClasses] = 1.0;
  Tensor x = literal("x", gaussian(samples * 256, 4, 1.0), {.batch = Dims{kBatches, kBatch}, .output = Dims{256}});
  Tensor y = literal("y", onehot, {.batch = Dims{kBatches, kBatch}, .output = Dims{kClasses}});
  Tensor h = slice_batch(x, batch);
  for (std::size_t i = 1; i < dims.size(); ++i) {
    nn::Linear layer("l" + std::to_string(i - 1), Dims{dims[i]});
    h = layer(h);
    if (i + 1 < dims.size()) h = relu(h);
  }
  Tensor loss = nn::cross_entropy_loss(h, slice_batch(y, batch));
  auto ctx = runtime::Context::from_config();
  auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.01}, .batch = batch, .n_batches = kBatches});
  std::int64_t k = 0;
  const double ms = median_ms(steps, [&] {
    const std::int64_t b[] = {k++ % kBatches};
    step.ctx.run(step.step, b);
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

}  // namespace

int run_bench_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty() || (args[0] != "matmul" && args[0] != "mlp")) {
      err << "error: usage: cannl bench matmul --n N [--threads T] [--reps R] | cannl bench mlp "
             "[--threads T] [--steps S]\n";
      return 1;
    }
    const std::string threads = option(args, "threads", "");
    if (!threads.empty()) config::set_override("cc_threads", std::to_string(positive(args, "threads", "0")));
    return args[0] == "matmul" ? bench_matmul(args, out) : bench_mlp(args, out);
  } catch (const UserError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace cannl::app
