#pragma once
// Training: one compiled routine per step (forward, zero grads, backprop, optimizer update, epoch
// loss accumulation on the device), and a fit loop that reads the loss once per epoch.
//
//   auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.1}, .batch = batch, .n_batches = 16});
//   auto losses = train::fit(step, {.epochs = 40});

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cannl/nn/optimizers.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::train {

struct StepOptions {
  nn::SgdOptions sgd;
  ir::StaticSymbol batch;      // the static index selecting the batch of each step
  std::int64_t n_batches = 1;  // steps per epoch
  std::string name = "train_step";
};

struct TrainingStep {
  runtime::Context ctx;
  Tensor loss;
  runtime::Routine init;        // parameters, optimizer state
  runtime::Routine step;        // one training step
  runtime::Routine reset_loss;  // epoch_loss := 0
  ir::NodeRef epoch_loss;       // sum of the step losses since the last reset
  std::int64_t n_batches = 1;
};

/// Uploads the host literals the roots read (once per context).
void upload_literals(runtime::Context& ctx, const std::vector<Tensor>& roots);

/// Compiles the init, step and loss-reset routines and runs init.
TrainingStep compile_step(runtime::Context ctx, const Tensor& loss, const StepOptions& options);

struct EpochReport {
  int epoch = 0;          // 1-based
  int epochs = 0;
  double mean_loss = 0;   // mean of the step losses of this epoch
  double steps_per_second = 0;
};

struct FitOptions {
  int epochs = 10;
  /// Called after every epoch (e.g. to print a line or record the loss curve).
  std::function<void(const EpochReport&)> on_epoch;
};

/// Runs `epochs` epochs of `n_batches` steps; a progress bar (epoch, step, loss, steps/s) is drawn
/// on stderr when it is a terminal (config key progress_bar). Returns the mean loss per epoch.
std::vector<double> fit(TrainingStep& step, const FitOptions& options);

/// Compiles a routine computing `outputs` (forward only) in `ctx`.
runtime::Routine compile_forward(runtime::Context& ctx, const std::vector<Tensor>& outputs,
                                 const std::string& name);

}  // namespace cannl::train
