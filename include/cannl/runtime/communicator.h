#pragma once
// The processes of a distributed run and the collectives between them: MPI when cannl was built
// with it and the program was started by mpirun, else this process alone. Only byte-free,
// tensor-free operations on host doubles: the training layer packs its gradients into one
// contiguous buffer and sums it across processes in one call.
//
//   auto comm = runtime::mpi_communicator();          // BackendUnavailable without MPI
//   std::vector<double> g = ...;                      // this rank's gradients, packed
//   comm->allreduce_sum(g, "gradients");              // every rank now holds the sum
//
// No collective waits forever: each one gives up after config key `distributed_timeout_s`
// seconds with a DistributedError naming the ranks that did not arrive (dead, hung, or failing
// elsewhere). The communicator is then broken (every later call throws); a program should report
// the error and call abort(), which ends every process of the run.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cannl::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's number, 0 <= rank() < size().
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Replaces `values` on every rank with the elementwise sum over the ranks (the same bits on
  /// every rank). `what` names the collective in errors ("gradients of step 12").
  virtual void allreduce_sum(std::span<double> values, std::string_view what) = 0;
  /// The same in f32 (half the bytes: f32 gradients are summed in their own precision).
  virtual void allreduce_sum(std::span<float> values, std::string_view what) = 0;
  /// Returns once every rank called it (e.g. after rank 0 wrote a checkpoint the others read).
  virtual void barrier(std::string_view what) = 0;
  /// Stops the other processes of the run with `exit_code` after a DistributedError (they may be
  /// waiting for this one at a collective); the caller then returns its own error code. MPI ends
  /// the whole job (MPI_Abort, this process included); a lone process has no others to stop.
  virtual void stop_other_processes(int exit_code) = 0;
  /// "MPI (rank 1 of 2)", "one process".
  virtual std::string describe() const = 0;
};

/// This process alone: rank 0 of 1, collectives return at once.
std::shared_ptr<Communicator> single_process_communicator();

/// Whether this build of cannl has MPI (Open MPI found by CMake).
bool mpi_built_in();

/// MPI_COMM_WORLD of a program started by mpirun (MPI initialized on first use, finalized at
/// exit). Throws BackendUnavailable naming why when cannl was built without MPI.
std::shared_ptr<Communicator> mpi_communicator();

}  // namespace cannl::runtime
