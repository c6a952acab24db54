#include "cannl/nn/training.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

#include "cannl/nn/data_parallel.h"
#include "cannl/nn/grad_clip.h"
#include "cannl/nn/ops.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "cannl/tensor/autodiff.h"
#include "nn/step_parts.h"

namespace cannl::train {
namespace {

bool progress_enabled() {
  // Any case ("AUTO" too); a value that is neither auto nor a boolean names all it may be.
  const std::string mode =
      config::get_one_of("progress_bar", {"auto", "true", "false", "1", "0", "yes", "no", "on", "off"});
  if (mode == "auto") return isatty(STDERR_FILENO) != 0;
  return config::get_bool("progress_bar");
}

/// A data-parallel step's steps are global steps: one batch over every replica.
void draw_progress(const EpochReport& r, std::int64_t step, std::int64_t steps, double loss, bool global) {
  std::fprintf(stderr, "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.5f  %.0f %ssteps/s", r.epoch,
               r.epochs, static_cast<long long>(step), static_cast<long long>(steps), loss,
               r.steps_per_second, global ? "global " : "");
  std::fflush(stderr);
}

ir::Comp comp_of(std::vector<ir::AsgnRef> body, const std::string& comment) {
  ir::Comp c;
  c.body.push_back(ir::make_block(comment, std::move(body)));
  return c;
}

/// The chosen optimizer's code; `adam_state` receives Adam(W)'s state.
nn::OptimizerCode optimizer_code(const std::vector<Tensor>& params, const StepOptions& options,
                                 std::optional<nn::AdamCode>& adam_state) {
  if (options.optimizer == Optimizer::Sgd) return nn::sgd(params, options.sgd);
  nn::AdamOptions adam = options.adam;
  adam.decoupled = options.optimizer == Optimizer::AdamW;
  adam_state = nn::adam(params, adam);
  return adam_state->code;
}

/// The literals of root's graph that `step` writes (running statistics): state a checkpoint keeps.
std::vector<ir::NodeRef> written_literals(const Tensor& root, const ir::Comp& step) {
  const std::vector<ir::NodeRef> written = ir::written_nodes(step);
  std::vector<ir::NodeRef> state;
  for (const Tensor& t : literals_of({root}))
    if (std::find(written.begin(), written.end(), t.value()) != written.end()) state.push_back(t.value());
  return state;
}

const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Adam: return "adam";
    case Optimizer::AdamW: return "adamw";
  }
  return "?";
}

}  // namespace

void upload_literals(runtime::Context& ctx, const std::vector<Tensor>& roots) {
  resolve_shapes(roots);
  for (const auto& t : literals_of(roots))
    if (!ctx.is_initialized(t.value())) ctx.set_values(t.value(), *t.impl().host_values);
}

runtime::Routine compile_forward(runtime::Context& ctx, const std::vector<Tensor>& outputs,
                                 const std::string& name, const runtime::CompileOptions& options) {
  ir::Comp comp = forward_code(outputs);
  upload_literals(ctx, outputs);
  if (logging::debug_level() >= 1)
    logging::info(name + ": contractions multiply in " + precision_summary(outputs));
  return ctx.compile(comp, name, options);
}

std::int64_t steps_per_epoch(const StepOptions& options, const std::string& caller) {
  const ir::StaticSymbol& batch = options.batch;
  const bool has_batch = batch.symbol.id >= 0;
  const std::string symbol = "the batch symbol '" + batch.name + "'";
  if (options.n_batches < 0)
    throw RuntimeUsageError(caller + ": n_batches must be >= 1 (or 0: the batch symbol's range), got " +
                            std::to_string(options.n_batches));
  if (options.n_batches == 0) {
    if (!has_batch) return 1;
    // An unknown range cannot stand for the epoch: guessing 1 is the silent partial epoch.
    if (batch.range < 1)
      throw RuntimeUsageError(caller + ": " + symbol + " has no range, so n_batches cannot default to it; "
                              "give n_batches, or the symbol its range");
    return batch.range;
  }
  // A smaller count is the caller's choice (a shorter epoch); a larger one indexes past the data.
  if (has_batch && batch.range > 0 && options.n_batches > batch.range)
    throw RuntimeUsageError(caller + ": n_batches = " + std::to_string(options.n_batches) + " exceeds the range " +
                            std::to_string(batch.range) + " of " + symbol +
                            "; batches past it do not exist (leave n_batches at 0 to take the range)");
  return options.n_batches;
}

StepParts step_parts(const Tensor& loss, const StepOptions& options) {
  StepParts parts;
  parts.n_batches = steps_per_epoch(options, "compile_step");
  parts.params = params_of({loss});
  parts.root = loss;
  if (options.loss_scale) {
    parts.loss_scaler = std::make_shared<nn::LossScaler>(loss, *options.loss_scale);
    parts.root = parts.loss_scaler->scaled_loss();
  }
  parts.gradients = grad_update_code(parts.root);
  // uniform_at's (dropout's) steps-done counters advance after their last read, so every global
  // step draws fresh values even where its step symbol, the batch, repeats each epoch; the step
  // writes them, so they are model state that checkpoints keep.
  const std::vector<Tensor> counters = nn::step_counters_of({parts.root});
  if (!counters.empty())
    parts.gradients.body.push_back(ir::make_block("count the step", nn::advance_step_counters(counters)));
  parts.model_state = written_literals(parts.root, parts.gradients);
  if (parts.loss_scaler)
    parts.gradients.body.push_back(
        ir::make_block("unscale and check gradients", parts.loss_scaler->unscale_and_check(parts.params)));
  if (options.clip_grad_norm)
    parts.update.push_back(ir::make_block("clip gradients",
                                          nn::clip_grad_norm(parts.params, *options.clip_grad_norm).code));
  nn::OptimizerCode opt = optimizer_code(parts.params, options, parts.adam);
  parts.update.push_back(ir::make_block(std::string(optimizer_name(options.optimizer)) + " update", opt.update));

  parts.epoch_loss = ir::make_node("epoch_loss", loss.value()->dtype, loss.value()->dims);
  ir::update_memory_mode(*parts.epoch_loss, ir::MemoryMode::Materialized, 62);  // read once per epoch
  ir::AccumOp acc;
  acc.lhs = parts.epoch_loss;
  acc.accum = ir::Op::Add;
  acc.args = {ir::Operand::of(loss.value())};
  acc.projections = identity_projections(parts.epoch_loss->dims, 1);
  parts.accumulate_loss = ir::make_block("accumulate epoch loss", {ir::make_accum(acc)});

  parts.init = init_params_code(parts.params);
  for (auto& a : opt.init) parts.init.body.push_back(a);
  parts.optimizer_state = ir::written_nodes(comp_of(opt.init, "optimizer state"));
  parts.init.body.push_back(ir::make_fetch(parts.epoch_loss, ir::FetchConstant{0}));
  parts.reset_loss = comp_of({ir::make_fetch(parts.epoch_loss, ir::FetchConstant{0})}, "reset epoch loss");
  return parts;
}

ir::Comp StepParts::whole_step() const {
  ir::Comp comp = gradients;
  for (const auto& block : update) comp.body.push_back(block);
  comp.body.push_back(accumulate_loss);
  return comp;
}

TrainingStep compile_step(runtime::Context ctx, const Tensor& loss, const StepOptions& options) {
  StepParts parts = step_parts(loss, options);
  TrainingStep s{ctx, loss, {}, {}, {}, parts.epoch_loss, parts.n_batches, std::move(parts.adam), nullptr, {}, {}};
  for (const auto& p : parts.params) s.params.push_back(p.value());
  s.optimizer_state = parts.optimizer_state;
  s.model_state = parts.model_state;
  s.loss_scaler = parts.loss_scaler;
  upload_literals(s.ctx, {parts.root});
  if (logging::debug_level() >= 1)
    logging::info(options.name + ": contractions multiply in " + precision_summary({loss}) +
                  (s.loss_scaler ? ", dynamic loss scaling" : ""));
  // Compile order is execution order: each routine depends on the ones before it.
  s.init = s.ctx.compile(parts.init, "init_params");
  s.reset_loss = s.ctx.compile(parts.reset_loss, "reset_epoch_loss");
  auto compile = [&](const ir::Comp& comp, const std::string& name) {
    return options.compile_step_routine ? options.compile_step_routine(s.ctx, comp, name)
                                        : s.ctx.compile(comp, name, options.step_compile);
  };
  if (s.loss_scaler) {
    // The host reads the check between the two routines: the update runs only on finite gradients.
    ir::Comp gradients = parts.gradients;
    gradients.body.push_back(parts.accumulate_loss);
    s.step = compile(gradients, options.name);
    s.update = compile(comp_of(parts.update, "update"), options.name + "_update");
  } else {
    s.step = compile(parts.whole_step(), options.name);
  }
  s.ctx.run(s.init);
  s.ctx.run(s.reset_loss);
  return s;
}

namespace {

void run_one_step(TrainingStep& s, std::int64_t b) {
  if (s.parallel) {
    s.parallel->run_step(b);
    return;
  }
  const std::int64_t index[] = {b};
  s.ctx.run(s.step, std::span<const std::int64_t>(index, s.step.statics().empty() ? 0 : 1));
  if (s.loss_scaler && s.loss_scaler->after_gradients(s.ctx))
    s.ctx.run(s.update, std::span<const std::int64_t>(index, s.update.statics().empty() ? 0 : 1));
}

double mean_epoch_loss(TrainingStep& s) {
  if (s.parallel)
    return s.parallel->epoch_loss_sum() / static_cast<double>(s.n_batches * s.parallel->replicas());
  return s.ctx.get_values(s.epoch_loss).at(0) / static_cast<double>(s.n_batches);
}

}  // namespace

std::vector<double> fit(TrainingStep& s, const FitOptions& options) {
  const bool progress = progress_enabled();
  std::vector<double> losses;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    if (s.parallel) s.parallel->reset_loss(); else s.ctx.run(s.reset_loss);
    EpochReport report{epoch, options.epochs, 0, 0};
    for (std::int64_t b = 0; b < s.n_batches; ++b) {
      run_one_step(s, b);
      if (progress) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        report.steps_per_second = static_cast<double>(b + 1) / std::max(secs, 1e-9);
        draw_progress(report, b + 1, s.n_batches, losses.empty() ? 0.0 : losses.back(), s.parallel != nullptr);
      }
      if (options.on_step) options.on_step(epoch, b);
    }
    report.mean_loss = mean_epoch_loss(s);  // waits for the devices
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.steps_per_second = static_cast<double>(s.n_batches) / std::max(secs, 1e-9);
    losses.push_back(report.mean_loss);
    if (progress) draw_progress(report, s.n_batches, s.n_batches, report.mean_loss, s.parallel != nullptr);
    if (options.on_epoch) options.on_epoch(report);
  }
  if (progress) std::fprintf(stderr, "\n");
  return losses;
}

}  // namespace cannl::train
