#pragma once
// Training: one compiled routine per step (forward, zero grads, backprop, optimizer update, epoch
// loss accumulation on the device), and a fit loop that reads the loss once per epoch.
//
//   auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.1}, .batch = batch});  // batch.range steps an epoch
//   auto losses = train::fit(step, {.epochs = 40});
//
// Choosing the optimizer (SGD unless `optimizer` says otherwise; the other options are ignored):
//
//   auto adam = train::compile_step(ctx, loss, {.optimizer = train::Optimizer::Adam,
//                                               .adam = {.schedule = {.lr = 1e-3}},
//                                               .batch = batch});
//   auto adamw = train::compile_step(ctx, loss, {.optimizer = train::Optimizer::AdamW,
//                                                .adam = {.schedule = {.lr = 3e-4}, .weight_decay = 0.1},
//                                                .clip_grad_norm = 1.0, .batch = batch});

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cannl/nn/adam.h"
#include "cannl/nn/loss_scaling.h"
#include "cannl/nn/optimizers.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::train {

/// The update rule of a training step. Adam is L2-regularized Adam (adam.weight_decay adds
/// wd * p to the gradient); AdamW decays the weights directly. The choice sets adam.decoupled
/// (Adam: false, AdamW: true) whatever the options say.
enum class Optimizer { Sgd, Adam, AdamW };

struct StepOptions {
  Optimizer optimizer = Optimizer::Sgd;
  nn::SgdOptions sgd;          // used by Optimizer::Sgd
  nn::AdamOptions adam;        // used by Optimizer::Adam and Optimizer::AdamW
  /// Clip the gradients to this global norm before the update (nn::clip_grad_norm).
  std::optional<double> clip_grad_norm;
  ir::StaticSymbol batch;      // the static index selecting the batch of each step
  /// Steps per epoch; fit runs batches 0 .. n_batches - 1. 0 (the default) takes the batch
  /// symbol's range, so an epoch sees every batch (1 without a batch symbol). A count below the
  /// range is allowed (a shorter epoch); one above it is a RuntimeUsageError naming both.
  std::int64_t n_batches = 0;
  std::string name = "train_step";
  /// How the step routine is compiled, e.g. a schedule of its own (runtime::CompileOptions); init
  /// and the loss reset always get the backend's default.
  runtime::CompileOptions step_compile;
  /// Compiles the step routine in place of ctx.compile(comp, name, step_compile), e.g. the tuner:
  ///   .compile_step_routine = [](auto& ctx, const auto& comp, const auto& name) { return tune::tune(ctx, comp, name); }
  std::function<runtime::Routine(runtime::Context&, const ir::Comp&, const std::string&)> compile_step_routine;
  /// Dynamic loss scaling (nn/loss_scaling.h; for the f16 precision policy): the step becomes two
  /// routines, the gradients (unscaled and checked) and the update, which is skipped when a
  /// gradient is not finite. Not available with data_parallel yet.
  std::optional<nn::LossScaleOptions> loss_scale;
};

class DataParallel;

struct TrainingStep {
  runtime::Context ctx;
  Tensor loss;
  runtime::Routine init;        // parameters, optimizer state
  runtime::Routine step;        // one training step
  runtime::Routine reset_loss;  // epoch_loss := 0
  ir::NodeRef epoch_loss;       // sum of the step losses since the last reset
  std::int64_t n_batches = 1;   // steps per epoch, as StepOptions::n_batches resolved
  /// Adam(W)'s state (step counter, moments) when the step uses Adam or AdamW.
  std::optional<nn::AdamCode> adam;
  /// Set by train::data_parallel (data_parallel.h): the replicas fit runs its global steps on.
  std::shared_ptr<DataParallel> parallel;
  /// Parameters and optimizer state, for checkpoints (with model_state and the loss scaler's state).
  std::vector<ir::NodeRef> params;
  std::vector<ir::NodeRef> optimizer_state;
  /// With StepOptions::loss_scale: the scale's state (state().scale, skipped_steps); `step` then
  /// computes the gradients and `update` applies them when they are finite.
  std::shared_ptr<nn::LossScaler> loss_scaler;
  runtime::Routine update;
  /// Literals the step writes in place (BatchNorm's running statistics, dropout's steps-done
  /// counters), for checkpoints.
  std::vector<ir::NodeRef> model_state;
};

/// Uploads the host literals the roots read (once per context).
void upload_literals(runtime::Context& ctx, const std::vector<Tensor>& roots);

/// Compiles the init, step and loss-reset routines and runs init. The step runs forward, backprop,
/// the optional clipping and the chosen optimizer's update, then adds the loss to epoch_loss.
/// Throws RuntimeUsageError for n_batches < 0, above the batch symbol's range, or left at 0 with
/// a batch symbol of unknown range, and for the optimizers' invalid settings.
TrainingStep compile_step(runtime::Context ctx, const Tensor& loss, const StepOptions& options);

struct EpochReport {
  int epoch = 0;          // 1-based
  int epochs = 0;
  double mean_loss = 0;   // mean of the step losses of this epoch
  double steps_per_second = 0;  // global steps (one batch over every replica) per second
};

struct FitOptions {
  int epochs = 10;
  /// Called after every epoch (e.g. to print a line or record the loss curve).
  std::function<void(const EpochReport&)> on_epoch;
  /// Called after every step with the 1-based epoch and the 0-based batch, e.g. to stop a run
  /// from outside: an exception thrown here ends fit (the Python package raises Ctrl-C this way).
  ///   .on_step = [&](int, std::int64_t) { if (stop_requested) throw Interrupted(); }
  std::function<void(int epoch, std::int64_t batch)> on_step;
};

/// Runs `epochs` epochs of `n_batches` steps (global steps of a data_parallel step); a progress
/// bar (epoch, step, loss, global steps/s) is drawn on stderr when it is a terminal (config key
/// progress_bar). Returns the mean loss per epoch (over every replica of a data-parallel step).
std::vector<double> fit(TrainingStep& step, const FitOptions& options);

/// Compiles a routine computing `outputs` (forward only) in `ctx`, with `options` (e.g. a
/// schedule instead of the backend's default).
runtime::Routine compile_forward(runtime::Context& ctx, const std::vector<Tensor>& outputs,
                                 const std::string& name, const runtime::CompileOptions& options = {});

}  // namespace cannl::train
