// cannl::train: compiling a training step (forward, backprop, clipping, the optimizer's update,
// the epoch loss) and the fit loop with its progress bar. fit releases the GIL; its callbacks take
// it back, and Ctrl-C is checked after every step (KeyboardInterrupt ends fit cleanly).
//
//   step = cannl.train.compile_step(ctx, loss, sgd=cannl.train.SgdOptions(lr=0.1, momentum=0.9),
//                                   batch=batch, n_batches=16)
//   losses = cannl.train.fit(step, epochs=40)
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cannl/nn/training.h"
#include "cannl/tune/tune.h"

namespace cannl::python {
namespace {

void bind_options(nb::module_& m) {
  nb::enum_<train::Optimizer>(m, "Optimizer", "The update rule of a training step.")
      .value("Sgd", train::Optimizer::Sgd).value("Adam", train::Optimizer::Adam)
      .value("AdamW", train::Optimizer::AdamW);
  nb::class_<nn::SgdOptions>(m, "SgdOptions", "SGD: d = grad + wd p; momentum m = mu m + d; p -= lr d.")
      .def("__init__", [](nn::SgdOptions* self, double lr, double momentum, double weight_decay, bool nesterov) {
             new (self) nn::SgdOptions{lr, momentum, weight_decay, nesterov};
           }, nb::kw_only(), nb::arg("lr") = 0.1, nb::arg("momentum") = 0.0, nb::arg("weight_decay") = 0.0,
           nb::arg("nesterov") = false)
      .def_rw("lr", &nn::SgdOptions::lr).def_rw("momentum", &nn::SgdOptions::momentum)
      .def_rw("weight_decay", &nn::SgdOptions::weight_decay).def_rw("nesterov", &nn::SgdOptions::nesterov);
  nb::enum_<nn::ScheduleKind>(m, "ScheduleKind", "Learning-rate schedules (computed on the device).")
      .value("Constant", nn::ScheduleKind::Constant).value("LinearWarmup", nn::ScheduleKind::LinearWarmup)
      .value("Cosine", nn::ScheduleKind::Cosine).value("WarmupCosine", nn::ScheduleKind::WarmupCosine);
  nb::class_<nn::LrSchedule>(m, "LrSchedule", "LrSchedule(kind=ScheduleKind.WarmupCosine, lr=3e-4, ...)")
      .def("__init__", [](nn::LrSchedule* self, nn::ScheduleKind kind, double lr, std::int64_t warmup_steps,
                          std::int64_t total_steps, double min_lr) {
             new (self) nn::LrSchedule{kind, lr, warmup_steps, total_steps, min_lr};
           }, nb::kw_only(), nb::arg("kind") = nn::ScheduleKind::Constant, nb::arg("lr") = 1e-3,
           nb::arg("warmup_steps") = 0, nb::arg("total_steps") = 0, nb::arg("min_lr") = 0.0)
      .def("value", [](const nn::LrSchedule& s, double step) { return nn::schedule_value(s, step); },
           nb::arg("step"), "The rate at 1-based step `step`.");
  nb::class_<nn::AdamOptions>(m, "AdamOptions", "Adam / AdamW (PyTorch's formulation).")
      .def("__init__", [](nn::AdamOptions* self, std::optional<nn::LrSchedule> schedule, std::optional<double> lr,
                          double beta1, double beta2, double eps, double weight_decay) {
             nn::LrSchedule s = schedule.value_or(nn::LrSchedule{});
             if (lr) s.lr = *lr;
             new (self) nn::AdamOptions{s, beta1, beta2, eps, weight_decay, false};
           }, nb::kw_only(), nb::arg("schedule") = nb::none(), nb::arg("lr") = nb::none(), nb::arg("beta1") = 0.9,
           nb::arg("beta2") = 0.999, nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 0.0,
           "lr, when given, sets schedule.lr (a constant schedule by default).");
}

void bind_step(nb::module_& m) {
  nb::class_<train::TrainingStep>(m, "TrainingStep", "The compiled init, step and loss-reset routines.")
      .def_ro("ctx", &train::TrainingStep::ctx)
      .def_ro("loss", &train::TrainingStep::loss)
      .def_ro("init", &train::TrainingStep::init)
      .def_ro("step", &train::TrainingStep::step)
      .def_ro("reset_loss", &train::TrainingStep::reset_loss)
      .def_ro("epoch_loss", &train::TrainingStep::epoch_loss)
      .def_ro("n_batches", &train::TrainingStep::n_batches)
      .def_prop_ro("adam_state", [](const train::TrainingStep& s) {
             std::vector<ir::NodeRef> nodes;
             if (!s.adam) return nodes;
             nodes.push_back(s.adam->step);
             nodes.insert(nodes.end(), s.adam->m.begin(), s.adam->m.end());
             nodes.insert(nodes.end(), s.adam->v.begin(), s.adam->v.end());
             return nodes;
           }, "Adam(W)'s state nodes (step counter, first then second moments), for checkpoints.");
  nb::class_<train::EpochReport>(m, "EpochReport", "What fit reports after each epoch.")
      .def_ro("epoch", &train::EpochReport::epoch)
      .def_ro("epochs", &train::EpochReport::epochs)
      .def_ro("mean_loss", &train::EpochReport::mean_loss)
      .def_ro("steps_per_second", &train::EpochReport::steps_per_second)
      .def("__repr__", [](const train::EpochReport& r) {
        return "<cannl.train.EpochReport " + std::to_string(r.epoch) + "/" + std::to_string(r.epochs) +
               " loss " + std::to_string(r.mean_loss) + ">";
      });
}

train::TrainingStep compile_step(runtime::Context ctx, const Tensor& loss, train::Optimizer optimizer,
                                 const nn::SgdOptions& sgd, const nn::AdamOptions& adam,
                                 std::optional<double> clip, std::optional<ir::StaticSymbol> batch,
                                 std::int64_t n_batches, const std::string& name, bool tune) {
  train::StepOptions options{.optimizer = optimizer, .sgd = sgd, .adam = adam, .clip_grad_norm = clip,
                             .batch = batch.value_or(ir::StaticSymbol{}), .n_batches = n_batches, .name = name};
  if (tune)
    options.compile_step_routine = [](runtime::Context& c, const ir::Comp& comp, const std::string& n) {
      return tune::tune(c, comp, n);
    };
  auto step = train::compile_step(std::move(ctx), loss, options);
  remember_context_of_graph({loss}, step.ctx);
  return step;
}

/// fit with the GIL released; the callbacks take it back. A pending KeyboardInterrupt (or an
/// exception of on_epoch) leaves fit as a Python exception after the step that saw it.
std::vector<double> fit(train::TrainingStep& step, int epochs, nb::object on_epoch) {
  train::FitOptions options{.epochs = epochs};
  if (!on_epoch.is_none())
    options.on_epoch = [&on_epoch](const train::EpochReport& r) {
      nb::gil_scoped_acquire gil;
      on_epoch(r);
    };
  options.on_step = [](int, std::int64_t) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  };
  nb::gil_scoped_release release;
  std::lock_guard<std::recursive_mutex> lock(library_mutex());
  return train::fit(step, options);
}

}  // namespace

void bind_train(nb::module_& m) {
  bind_options(m);
  bind_step(m);
  m.def("compile_step", &compile_step, nb::arg("ctx"), nb::arg("loss"), nb::kw_only(),
        nb::arg("optimizer") = train::Optimizer::Sgd, nb::arg("sgd") = nn::SgdOptions{},
        nb::arg("adam") = nn::AdamOptions{}, nb::arg("clip_grad_norm") = nb::none(),
        nb::arg("batch") = nb::none(), nb::arg("n_batches") = 0, nb::arg("name") = "train_step",
        nb::arg("tune") = false, kReleased,
        "Compiles the init, step and loss-reset routines and runs init (GIL released).\n"
        "  step = compile_step(ctx, loss, sgd=SgdOptions(lr=0.1, momentum=0.9), batch=batch)\n"
        "n_batches (steps per epoch) defaults to 0: the batch symbol's range, so an epoch sees every\n"
        "batch (1 without a batch). A smaller count is a shorter epoch; a larger one is an error.\n"
        "tune=True searches the step's schedule (cannl::tune) instead of the default one.");
  m.def("fit", &fit, nb::arg("step"), nb::kw_only(), nb::arg("epochs") = 10, nb::arg("on_epoch") = nb::none(),
        "Runs epochs x n_batches steps; returns the mean loss per epoch. A progress bar is drawn on\n"
        "stderr when it is a terminal (config key progress_bar). on_epoch(EpochReport) after each epoch.");
  m.def("compile_forward",
        [](runtime::Context& ctx, const std::vector<Tensor>& outputs, const std::string& name) {
          auto routine = train::compile_forward(ctx, outputs, name);
          remember_context_of_graph(outputs, ctx);
          return routine;
        }, nb::arg("ctx"), nb::arg("outputs"), nb::arg("name") = "forward", kReleased,
        "Compiles a forward-only routine computing the outputs (run it with ctx.run).");
  // The C++ side of benchmarks/python/step_overhead.py: the same routine driven by a C++ loop.
  m.def("_run_steps",
        [](runtime::Context& ctx, const runtime::Routine& routine, std::int64_t steps, std::int64_t n_batches) {
          for (std::int64_t k = 0; k < steps; ++k) {
            const std::int64_t index[] = {k % n_batches};
            ctx.run(routine, std::span<const std::int64_t>(index, routine.statics().empty() ? 0 : 1));
          }
        }, nb::arg("ctx"), nb::arg("routine"), nb::arg("steps"), nb::arg("n_batches"), kReleased);
}

}  // namespace cannl::python
