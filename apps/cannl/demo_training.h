#pragma once
// How `cannl demo` trains: one device (the configured backend), or data-parallel over the devices
// of a multi-device CPU context and the processes of an MPI run; checkpoints after every epoch
// and resumption from them. Each model's code builds its loss for one replica's batch.
//
//   DemoTraining t = demo_training(options);             // devices, processes, replicas
//   auto step = t.compile(loss, step_options);           // compile_step or data_parallel
//   auto curve = t.fit(step, options, print_epoch);      // rank 0 prints, checkpoints

#include <functional>
#include <memory>
#include <vector>

#include "cannl/cannl.h"
#include "cannl/runtime/communicator.h"
#include "demo.h"

namespace cannl::app {

struct DemoTraining {
  runtime::Context ctx;
  std::shared_ptr<runtime::Communicator> communicator;
  int devices = 1;

  int replicas() const { return devices * communicator->size(); }
  bool is_rank0() const { return communicator->rank() == 0; }
  /// One replica's share of `global_batch`; RuntimeUsageError when it does not divide.
  std::int64_t micro_batch(std::int64_t global_batch) const;
  /// compile_step on one replica, else data_parallel (options.n_batches counts micro-batches).
  train::TrainingStep compile(const Tensor& loss, const train::StepOptions& options) const;
  /// The epochs (after a resume: the remaining ones), a checkpoint after each when asked; rank 0
  /// reports each epoch to `on_epoch`. Returns every epoch's mean loss trained here.
  std::vector<double> fit(train::TrainingStep& step, const DemoOptions& options,
                          const std::function<void(const train::EpochReport&)>& on_epoch) const;
  /// "2 replicas (1 device x 2 processes), micro-batch 32".
  std::string describe(std::int64_t global_batch) const;
};

/// The devices and processes `options` ask for (MPI initialized when distributed).
DemoTraining demo_training(const DemoOptions& options);

/// Runs `body`; a DistributedError (another rank died or hangs) is reported and ends every rank
/// of the run through the communicator (exit status 3), so no rank waits for the dead one.
int run_distributed_safely(const DemoTraining& training, const std::function<int()>& body);

/// The makemore MLP (embeddings of 3 characters -> tanh 64 -> logits) trained with AdamW on the
/// first names of `options.data`; prints the loss per epoch. Returns the exit code.
int run_makemore_demo(const DemoOptions& options);

}  // namespace cannl::app
