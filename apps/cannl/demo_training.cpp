// `cannl demo`'s training driver: devices, processes, checkpoints (see demo_training.h).
#include "demo_training.h"

#include <cstdio>
#include <iostream>
#include <numeric>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::app {

std::int64_t DemoTraining::micro_batch(std::int64_t global_batch) const {
  if (global_batch % replicas() != 0)
    throw RuntimeUsageError("the global batch of " + std::to_string(global_batch) + " does not split into " +
                            std::to_string(replicas()) + " replicas (--devices x processes); use a divisor of it");
  return global_batch / replicas();
}

train::TrainingStep DemoTraining::compile(const Tensor& loss, const train::StepOptions& options) const {
  if (replicas() == 1 && devices == 1 && communicator->size() == 1) return train::compile_step(ctx, loss, options);
  return train::data_parallel(ctx, loss, options, {.devices = devices, .communicator = communicator});
}

std::vector<double> DemoTraining::fit(train::TrainingStep& step, const DemoOptions& options,
                                      const std::function<void(const train::EpochReport&)>& on_epoch) const {
  int done = 0;
  if (options.resume) {
    if (options.checkpoint.empty()) throw RuntimeUsageError("--resume needs --checkpoint FILE");
    const auto metadata = train::restore_training_checkpoint(step, options.checkpoint);
    const auto it = metadata.find("epochs");
    done = it == metadata.end() ? 0 : std::stoi(it->second);
    if (is_rank0()) std::printf("resumed from %s after epoch %d\n", options.checkpoint.c_str(), done);
  }
  std::vector<double> losses;
  for (int epoch = done + 1; epoch <= options.epochs; ++epoch) {
    const auto loss = train::fit(step, {.epochs = 1, .on_epoch = [&](const train::EpochReport& r) {
                                          train::EpochReport report = r;
                                          report.epoch = epoch;
                                          report.epochs = options.epochs;
                                          if (is_rank0()) on_epoch(report);
                                        }});
    losses.push_back(loss.at(0));
    if (!options.checkpoint.empty())
      train::save_training_checkpoint(step, options.checkpoint, {{"epochs", std::to_string(epoch)}});
  }
  return losses;
}

std::string DemoTraining::describe(std::int64_t global_batch) const {
  if (replicas() == 1) return "batch " + std::to_string(global_batch);
  return "global batch " + std::to_string(global_batch) + " over " + std::to_string(replicas()) + " replicas (" +
         std::to_string(devices) + " device(s) x " + std::to_string(communicator->size()) +
         " process(es)), micro-batch " + std::to_string(global_batch / replicas());
}

namespace {

/// --devices N: N CPU devices; with backend=cuda N GPUs (config cuda_devices, else 0 .. N-1), with
/// backend=opencl devices 0 .. N-1 of the configured platform.
runtime::Context training_context(const DemoOptions& options) {
  if (options.devices <= 1) return runtime::Context::from_config();
  const std::string backend = config::get("backend");
  if (backend != "cuda" && backend != "opencl") return runtime::Context::cpu_devices(options.devices);
  if (backend == "cuda" && !config::get("cuda_devices").empty()) return runtime::Context::cuda_devices();
  std::vector<int> ordinals(static_cast<std::size_t>(options.devices));
  std::iota(ordinals.begin(), ordinals.end(), 0);
  if (backend == "cuda") return runtime::Context::cuda_devices(ordinals);
  return runtime::Context::opencl_devices(static_cast<int>(config::get_int("opencl_platform")), ordinals);
}

}  // namespace

DemoTraining demo_training(const DemoOptions& options) {
  DemoTraining t{training_context(options),
                 options.distributed ? runtime::mpi_communicator() : runtime::single_process_communicator(),
                 options.devices};
  return t;
}

int run_distributed_safely(const DemoTraining& training, const std::function<int()>& body) {
  try {
    return body();
  } catch (const DistributedError& e) {
    std::cerr << "error: DistributedError: " << e.what() << std::endl;
    training.communicator->stop_other_processes(3);
    return 3;
  }
}

}  // namespace cannl::app
