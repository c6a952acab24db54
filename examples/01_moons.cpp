// Tutorial 1: train a small MLP on the half-moons dataset.
//
// A model is a tensor expression. Shapes are inferred from use: `w1` gets its input size (2) from
// the data it multiplies; biases get their size from what they are added to. The training step
// (forward, backprop, SGD update) is compiled once into one routine of generated C; each step
// selects its batch with a static index.
#include <cannl/cannl.h>

#include <cstdio>

using namespace cannl;

int main() {
  auto data = datasets::moons({.samples = 512, .noise = 0.1, .seed = 7});
  const std::int64_t batch_size = 32, n_batches = 16;

  // The whole dataset lives on the device as [n_batches, batch_size] x 2 features.
  ir::StaticSymbol batch{ir::fresh_symbol(), n_batches, "batch"};
  Tensor x_all = literal("x", data.features, {.batch = {{n_batches, batch_size}}, .output = {{2}}});
  Tensor y_all = literal("y", data.one_hot(), {.batch = {{n_batches, batch_size}}, .output = {{2}}});

  // Parameters: only the hidden size and the number of classes are written down.
  Tensor w1 = param("w1", {.output = {{32}}, .init = {.kind = InitKind::Kaiming}});
  Tensor b1 = param("b1", {.init = {.kind = InitKind::Constant}});
  Tensor w2 = param("w2", {.output = {{2}}, .init = {.kind = InitKind::Kaiming}});
  Tensor b2 = param("b2", {.init = {.kind = InitKind::Constant}});
  auto model = [&](const Tensor& x) { return w2 * relu(w1 * x + b1) + b2; };

  Tensor loss = nn::cross_entropy(model(slice_batch(x_all, batch)), slice_batch(y_all, batch));
  std::printf("w1 has shape %s, b1 %s\n", w1.shape_string().c_str(), b1.shape_string().c_str());

  auto step = train::compile_step(runtime::Context::cpu(), loss,
                                  {.sgd = {.lr = 0.1, .momentum = 0.9}, .batch = batch, .n_batches = n_batches});
  auto losses = train::fit(step, {.epochs = 30});
  std::printf("loss: first epoch %.4f, last epoch %.4f\n", losses.front(), losses.back());

  // Evaluate on all points with a forward-only routine sharing the trained parameters.
  Tensor x_eval = literal("x_eval", data.features, {.batch = {{512}}, .output = {{2}}});
  Tensor logits = model(x_eval);
  auto evaluate = train::compile_forward(step.ctx, {logits}, "evaluate");
  step.ctx.run(evaluate);
  const double accuracy = nn::accuracy(step.ctx.get_values(logits.value()), data.labels, 2);
  std::printf("train accuracy: %.3f\n", accuracy);
  return accuracy >= 0.9 ? 0 : 1;
}
