// The optimizer's measured effect: buffers and step time of a training step compiled with
// optimize=true against optimize=false, for an MLP and for a softmax + cross-entropy classifier.
//
//   cmake -B build -DCANNL_BUILD_BENCHMARKS=ON && cmake --build build --target opt_effect
//   ./build/benchmarks/opt_effect [steps=2000] [interpreter]   (steps per measurement, in rounds of 5)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cannl/cannl.h"
#include "cannl/ir/loop_ir.h"
#include "cannl/nn/losses.h"
#include "cannl/nn/training.h"
#include "cannl/support/config.h"

using namespace cannl;

namespace {

struct Measure {
  int buffers = 0;  // nodes of the step with a context buffer
  int locals = 0;   // nodes of the step living as function-local arrays
  double ms_per_step = 0;
};

std::vector<double> values(std::size_t n, double scale) {
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = scale * static_cast<double>((k * 7919) % 13) / 13.0 - scale / 2;
  return v;
}

std::vector<double> one_hot(std::int64_t rows, std::int64_t classes) {
  std::vector<double> v(static_cast<std::size_t>(rows * classes), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) v[static_cast<std::size_t>(r * classes + (r * 5) % classes)] = 1;
  return v;
}

Measure measure(bool optimize, bool interpreter, int steps, const std::function<Tensor()>& make_loss) {
  config::set_override("optimize", optimize ? "true" : "false");
  auto ctx = interpreter ? runtime::Context::interpreter() : runtime::Context::cpu();
  const Tensor loss = make_loss();
  auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.05}});
  config::set_override("optimize", "");
  Measure m;
  for (const auto& n : ir::nodes_of(step.step.lowered().body))
    (ctx.has_buffer(n) ? m.buffers : m.locals) += 1;
  for (int k = 0; k < 20; ++k) ctx.run(step.step);  // warm up
  // The best of many short rounds: on a shared machine a long round is almost always preempted
  // somewhere, while a round of a few steps often runs undisturbed; noise only ever adds time.
  constexpr int kStepsPerRound = 5;
  m.ms_per_step = 1e300;
  for (int round = 0; round < std::max(1, steps / kStepsPerRound); ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < kStepsPerRound; ++k) ctx.run(step.step);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.ms_per_step = std::min(m.ms_per_step, 1000.0 * secs / kStepsPerRound);
  }
  return m;
}

void report(const char* name, bool interpreter, int steps, const std::function<Tensor()>& make_loss) {
  const Measure off = measure(false, interpreter, steps, make_loss);
  const Measure on = measure(true, interpreter, steps, make_loss);
  std::printf("%-24s buffers %3d -> %3d (locals %d)   step %.4f ms -> %.4f ms (x%.2f)\n", name,
              off.buffers, on.buffers, on.locals, off.ms_per_step, on.ms_per_step,
              off.ms_per_step / on.ms_per_step);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  const bool interpreter = argc > 2 && std::strcmp(argv[2], "interpreter") == 0;
  constexpr std::int64_t kBatch = 64, kIn = 16, kHidden = 64, kClasses = 8;
  report("mlp training step", interpreter, steps, [] {
    Tensor x = literal("x", values(kBatch * kIn, 2), {.batch = std::vector<std::int64_t>{kBatch}, .output = std::vector<std::int64_t>{kIn}});
    Tensor y = literal("y", one_hot(kBatch, kClasses), {.batch = std::vector<std::int64_t>{kBatch}, .output = std::vector<std::int64_t>{kClasses}});
    Tensor h = relu(param("w1", {.output = std::vector<std::int64_t>{kHidden}}) * x + param("b1"));
    Tensor h2 = relu(param("w2", {.output = std::vector<std::int64_t>{kHidden}}) * h + param("b2"));
    return nn::cross_entropy(param("w3", {.output = std::vector<std::int64_t>{kClasses}}) * h2 + param("b3"), y);
  });
  report("softmax + cross-entropy", interpreter, steps, [] {
    constexpr std::int64_t kRows = 256, kVocab = 32;
    Tensor x = literal("x", values(kRows * kIn, 2), {.batch = std::vector<std::int64_t>{kRows}, .output = std::vector<std::int64_t>{kIn}});
    Tensor y = literal("y", one_hot(kRows, kVocab), {.batch = std::vector<std::int64_t>{kRows}, .output = std::vector<std::int64_t>{kVocab}});
    return nn::cross_entropy(param("w", {.output = std::vector<std::int64_t>{kVocab}}) * x, y);
  });
  return 0;
}
