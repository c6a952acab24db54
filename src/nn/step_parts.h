#pragma once
// The pieces of a training step, built once from the loss and the step options: compile_step puts
// them into one routine, data_parallel into a gradient routine and an update routine with the
// all-reduce between them.
//
//   StepParts parts = step_parts(loss, options);
//   ir::Comp step = parts.whole_step();

#include <optional>
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

  /// Gradients, update, loss accumulation: compile_step's single routine.
  ir::Comp whole_step() const;
};

/// Throws RuntimeUsageError for n_batches < 1 and for the optimizers' invalid settings.
StepParts step_parts(const Tensor& loss, const StepOptions& options);

}  // namespace cannl::train
