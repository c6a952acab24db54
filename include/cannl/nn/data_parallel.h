#pragma once
// Data-parallel training: one replica of the training step per device and per process, each on
// its share of every global batch, their gradients summed in a fixed order (the local devices in
// order, then one all-reduce over the processes; in f32 when every gradient is f32, else in
// double) and averaged, the same update applied on every replica.
//
// On CUDA devices (Context::cuda_devices) the gradients never leave the GPUs when NCCL loads
// (config gpu_all_reduce=auto|nccl): one group of in-place ncclAllReduce(ncclAvg) calls, one per
// gradient, over every device of every process (the NCCL unique id travels over the
// communicator). NCCL's reduction order is its own (rings or trees over the GPUs), so losses
// equal single-device training within rounding, bitwise with two replicas (one addition, and a
// scaling by 1/2). Without libnccl (or gpu_all_reduce=host) the sum is the host's, as above.
//
// The loss is written for one replica's batch (the global batch divided by the number of replicas
// R), over a data set cut into `n_batches` such micro-batches (by default the batch symbol's
// range, as in compile_step); global step g runs micro-batch
// g * R + r on replica r, so R replicas see exactly the rows one device sees with the global
// batch. The loss must be a mean over the batch (cross-entropy, mse): the average of the replicas'
// gradients is then the gradient of the global batch.
//
//   auto devices = runtime::Context::cpu_devices(2);
//   auto step = train::data_parallel(devices, loss, {.sgd = {.lr = 0.1}, .batch = micro, .n_batches = 32});
//   train::fit(step, {.epochs = 10});         // 16 global steps per epoch on two devices
//
//   // under mpirun, one replica per process:
//   auto step = train::data_parallel(runtime::Context::cpu(), loss, options,
//                                    {.communicator = runtime::mpi_communicator()});

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <memory>
#include <span>
#include <vector>

#include "cannl/nn/training.h"
#include "cannl/runtime/communicator.h"
#include "cannl/runtime/device_average.h"

namespace cannl::train {

struct ParallelOptions {
  /// Replicas in this process: devices 0 .. devices-1 of the context (0: all its devices).
  int devices = 0;
  /// The processes of the run, one or more replicas each; null: this process alone.
  std::shared_ptr<runtime::Communicator> communicator;
};

/// One replica: its device's context and routines.
struct Replica {
  runtime::Context ctx;
  runtime::Routine init, reset_loss;
  runtime::Routine gradients;  // forward, backprop, epoch_loss += loss
  runtime::Routine update;     // clipping, the optimizer's update
};

/// The replicas of this process and how their gradients meet (TrainingStep::parallel).
class DataParallel {
 public:
  /// Replicas over every process.
  int replicas() const { return static_cast<int>(local.size()) * communicator->size(); }
  /// Global step `step_in_epoch` of an epoch: gradients on every local replica (concurrently,
  /// on their devices' queues), the all-reduce, the update on every replica (queued).
  void run_step(std::int64_t step_in_epoch);
  /// Sum over every replica of every process of the step losses since the last reset.
  double epoch_loss_sum();
  void reset_loss();

  std::vector<Replica> local;
  std::vector<ir::NodeRef> gradients;        // in params_of order
  std::vector<ir::NodeRef> params;
  std::vector<ir::NodeRef> optimizer_state;
  ir::NodeRef epoch_loss;
  std::shared_ptr<runtime::Communicator> communicator;
  /// NCCL across the CUDA devices (and processes) when it opened; null: the host sums.
  std::shared_ptr<runtime::DeviceAverage> device_average;
  /// Global steps run since training began (counted on, and restored, across epochs and resumes).
  std::int64_t steps_done = 0;

 private:
  void all_reduce_gradients();
  void all_reduce_f32(std::size_t total);
  void all_reduce_f64(std::size_t total);
};

/// Compiles the replicas (init, loss reset, gradients, update on every local device), runs init
/// on each and copies device 0's parameters and optimizer state to the others (processes agree
/// because initialization is seeded: the same `seed` everywhere). The result's ctx, init and
/// epoch_loss are replica 0's, its n_batches the global steps per epoch; fit runs global steps.
/// Throws RuntimeUsageError when the micro-batches per epoch (options.n_batches, 0: the batch
/// symbol's range) are not a multiple of the replica count or exceed that range, when
/// the step compiles through options.compile_step_routine (not supported here), and, on every
/// rank alike, when the processes run different numbers of local devices
/// (check_equal_device_counts, after one all-reduce of the counts before anything else).
TrainingStep data_parallel(runtime::Context ctx, const Tensor& loss, const StepOptions& options,
                           const ParallelOptions& parallel = {});

/// Throws RuntimeUsageError unless every process runs the same number of local devices:
/// `devices_per_rank[r]` is rank r's count, which data_parallel gathers from every rank with one
/// all-reduce at setup, so no rank goes on to take other micro-batches, divide by another replica
/// count or wait at collectives the others never reach. The message names each rank's count.
///   check_equal_device_counts(std::vector<int>{2, 1});  // "rank 0 has 2, rank 1 has 1 device(s)"
void check_equal_device_counts(std::span<const int> devices_per_rank);

/// Writes replica 0's parameters ("params/<label>"), optimizer state ("optimizer/<label>") and
/// model state the step writes in place ("state/<label>": BatchNorm's running statistics,
/// dropout's steps-done counters) with
/// `metadata`, a data-parallel step's global step count ("global_steps") and the loss scaler's
/// state ("loss_scale", "loss_scale_good_streak", "loss_scale_steps", "loss_scale_skipped_steps")
/// to `path` (defined in src/nn/training_checkpoint.cpp), on rank 0 only and atomically
/// (io::save_checkpoint: a crash leaves the previous file whole), then waits for every rank:
/// after it returns every rank may read the file. Works for compile_step's steps too.
///   save_training_checkpoint(step, "run/ckpt.safetensors", {{"epochs", "3"}});
void save_training_checkpoint(TrainingStep& step, const std::filesystem::path& path,
                              const std::map<std::string, std::string>& metadata = {});
/// Every rank restores every local replica from `path` (written by save_training_checkpoint):
/// parameters, optimizer state, model state, and the loss scaler's scale, streak and counters;
/// gets the file's metadata back. Throws FormatError for a file of another model, one without the
/// model state (written before checkpoints kept it: the message says so) or with bad metadata,
/// everything checked first so the replicas stay unchanged; IoError when it cannot be read. A
/// file without loss_scale (older, or saved without scaling) logs a warning and keeps the scale.
std::map<std::string, std::string> restore_training_checkpoint(TrainingStep& step,
                                                               const std::filesystem::path& path);

}  // namespace cannl::train
