#pragma once
// Dynamic loss scaling (for the f16 precision policy, precision_policy.h): the loss is multiplied
// by a scale S before backprop, so small gradients survive the f16 rounding of the backward
// products; the gradients are divided by S again before clipping and the update. A step whose
// gradients hold an infinity or a NaN (S too large: an f16 product overflowed) is skipped, with
// no update and no optimizer state change, and S is multiplied by `backoff_factor`; after
// `growth_interval` good steps in a row S is multiplied by `growth_factor`. S stays a power of
// two with the default factors, so scaling and unscaling are exact.
//
//   auto step = train::compile_step(ctx, loss, {.sgd = {.lr = 0.1}, .batch = batch, .n_batches = 16,
//                                               .loss_scale = nn::LossScaleOptions{.growth_interval = 500}});
//   train::fit(step, {.epochs = 4});
//   step.loss_scaler->state().scale;           // the current S
//   step.loss_scaler->state().skipped_steps;   // steps skipped so far

#include <cstdint>
#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/runtime/context.h"
#include "cannl/tensor/tensor.h"

namespace cannl::nn {

struct LossScaleOptions {
  double init_scale = 65536;         // 2^16, as torch.cuda.amp.GradScaler; S is an f32 value
                                     // (rounded to f32; beyond its range a RuntimeUsageError)
  double growth_factor = 2;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;  // good steps in a row before S grows
};

/// What a user can read between steps.
struct LossScaleState {
  double scale = 0;                  // S of the next step (f32, as the step multiplies by it)
  std::int64_t steps = 0;            // steps run, skipped ones included
  std::int64_t skipped_steps = 0;    // steps whose gradients were not finite
  std::int64_t good_streak = 0;      // good steps since S last changed
  bool last_step_skipped = false;
};

/// The scaled loss, the unscaling of the gradients and the finiteness check, as code; the host
/// side (`after_gradients`) decides whether the update runs and moves S.
class LossScaler {
 public:
  /// Throws RuntimeUsageError for an init_scale that is not a finite positive f32 (above
  /// 3.4e38, or rounding to 0), a factor that is not finite and positive, a growth factor below
  /// 1, a backoff factor not in (0, 1) or a growth interval below 1.
  LossScaler(const Tensor& loss, const LossScaleOptions& options);

  /// loss * S: the tensor backprop starts from.
  const Tensor& scaled_loss() const { return scaled_; }
  /// After backprop: every gradient of `params` divided by S, then `nonfinite` := the sum of
  /// g * 0 over every gradient cell (NaN exactly when some gradient is infinite or NaN).
  std::vector<ir::AsgnRef> unscale_and_check(const std::vector<Tensor>& params) const;
  /// Reads the check of the step just run in `ctx`; returns whether the update may run, and
  /// moves S (uploading it to `ctx`) as the options say.
  bool after_gradients(runtime::Context& ctx);
  const LossScaleState& state() const { return state_; }
  /// Continues from a saved state (a checkpoint's): S, the counters and the good-step streak;
  /// uploads S to `ctx`. Throws RuntimeUsageError when state.scale is not a positive finite f32.
  ///   step.loss_scaler->restore(step.ctx, saved_state);
  void restore(runtime::Context& ctx, const LossScaleState& state);

 private:
  void set_scale(runtime::Context& ctx, double scale);

  LossScaleOptions options_;
  Tensor scale_;       // a [1] literal holding S
  Tensor scaled_;
  ir::NodeRef nonfinite_;
  LossScaleState state_;
};

}  // namespace cannl::nn
