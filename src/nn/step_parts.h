#pragma once
// The pieces of a training step, built once from the loss and the step options: compile_step puts
// them into one routine, data_parallel into a gradient routine and an update routine with the
// all-reduce between them.
//
//   StepParts parts = step_parts(loss, options);
//   ir::Comp step = parts.whole_step();

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cannl/nn/training.h"

namespace cannl::train {

struct StepParts {
  ir::Comp gradients;                 // forward; zero grads; backprop
  std::vector<ir::AsgnRef> update;    // clipping (optional) and the optimizer's update, as blocks
  ir::AsgnRef accumulate_loss;        // epoch_loss += loss
  ir::Comp init;                      // parameters, optimizer state, epoch_loss := 0
  ir::Comp reset_loss;                // epoch_loss := 0
  ir::NodeRef epoch_loss;
  std::vector<Tensor> params;
  /// Nodes the optimizer keeps between steps (momenta, Adam's moments and step counter).
  std::vector<ir::NodeRef> optimizer_state;
  std::optional<nn::AdamCode> adam;
  /// With StepOptions::loss_scale: `gradients` starts backprop from the scaled loss and ends by
  /// unscaling and checking the gradients.
  std::shared_ptr<nn::LossScaler> loss_scaler;
  /// The tensors whose literals the routines read (the loss, or the scaled loss).
  Tensor root;
  /// Literals the step writes (BatchNorm's running statistics, uniform_at's steps-done counters,
  /// which `gradients` advances at its end): model state beside the parameters, which a
  /// checkpoint must keep.
  std::vector<ir::NodeRef> model_state;
  /// Steps per epoch (steps_per_epoch of the options).
  std::int64_t n_batches = 1;

  /// Gradients, update, loss accumulation: compile_step's single routine.
  ir::Comp whole_step() const;
};

/// Steps per epoch: options.n_batches, or when it is 0 the batch symbol's range (1 without a
/// batch symbol). Throws RuntimeUsageError, its message starting with `caller`, for a negative
/// count, for a count above the batch symbol's range (naming both), and for the default with a
/// batch symbol of unknown range (0).
///   steps_per_epoch({.batch = {fresh_symbol(), 4, "batch"}}, "compile_step") == 4
std::int64_t steps_per_epoch(const StepOptions& options, const std::string& caller);

/// Throws RuntimeUsageError for a bad n_batches (steps_per_epoch) and for the optimizers' invalid
/// settings.
StepParts step_parts(const Tensor& loss, const StepOptions& options);

}  // namespace cannl::train
