// A rank that reaches a collective after the others gave up on it (mpirun -np 2; ctest label mpi).
//
// Rank 0 times out waiting for rank 1 at a barrier and gets its DistributedError; rank 1 then
// arrives and sends its arrival message. The failed collective's receive for that message must no
// longer name memory: MpiCommunicator cancels it (or keeps its memory alive). Before, the receive
// stayed posted into the arrival round's vector, freed when the error unwound the stack, and the
// late message was written into whatever the heap had put there since. Rank 0 fills the heap's
// freed small blocks with a sentinel and checks that nothing overwrote them. Exit 0: passed.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cannl/runtime/communicator.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace {

using namespace std::chrono_literals;
constexpr long long kSentinel = 0x5e5e5e5e5e5e5e5e;

// The arrival round's vectors on 2 ranks hold 2 numbers or 2 requests: blocks of that size are
// the ones a freed round leaves for the next allocations to reuse.
std::vector<std::unique_ptr<long long[]>> sentinel_blocks() {
  std::vector<std::unique_ptr<long long[]>> blocks;
  for (int k = 0; k < 4096; ++k) {
    blocks.push_back(std::make_unique<long long[]>(2));
    blocks.back()[0] = blocks.back()[1] = kSentinel;
  }
  return blocks;
}

int overwritten(const std::vector<std::unique_ptr<long long[]>>& blocks) {
  int n = 0;
  for (const auto& b : blocks) n += (b[0] != kSentinel) + (b[1] != kSentinel);
  return n;
}

// Rank 0: the barrier fails naming rank 1; then rank 1's late message arrives.
int rank_zero(cannl::runtime::Communicator& comm) {
  std::string message;
  try {
    comm.barrier("late barrier");
  } catch (const cannl::DistributedError& e) {
    message = e.what();
  }
  if (message.find("rank 1 did not reach 'late barrier'") == std::string::npos) {
    std::fprintf(stderr, "FAIL: rank 0 expected a DistributedError naming rank 1, got '%s'\n", message.c_str());
    return 1;
  }
  const auto blocks = sentinel_blocks();
  MPI_Barrier(MPI_COMM_WORLD);  // rank 1 has sent its late arrival message
  for (int k = 0; k < 200; ++k) {  // MPI delivers messages while it is called
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(1ms);
  }
  if (const int n = overwritten(blocks)) {
    std::fprintf(stderr, "FAIL: the late message of rank 1 overwrote %d freed number(s) on rank 0\n", n);
    return 1;
  }
  std::printf("PASS: rank 0 failed naming rank 1; its late message wrote into no freed memory\n");
  return 0;
}

int rank_one(cannl::runtime::Communicator& comm) {
  std::this_thread::sleep_for(1500ms);  // rank 0 gives up after 0.5 s
  comm.barrier("late barrier");         // rank 0's message is there: this rank's round completes
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

}  // namespace

int main() {
  cannl::config::set_override("distributed_timeout_s", "0.5");
  auto comm = cannl::runtime::mpi_communicator();
  if (comm->size() != 2) {
    std::fprintf(stderr, "run with mpirun -np 2 (this run has %d process(es))\n", comm->size());
    return 2;
  }
  const int status = comm->rank() == 0 ? rank_zero(*comm) : rank_one(*comm);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();  // the communicator does not after a failure: it could wait for a dead rank
  return status;
}
