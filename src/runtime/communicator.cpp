// The single-process communicator, and the MPI one's stand-in when cannl is built without MPI.
#include "cannl/runtime/communicator.h"
#include "cannl/support/error.h"

namespace cannl::runtime {

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<double>, std::string_view) override {}
  void allreduce_sum(std::span<float>, std::string_view) override {}
  void barrier(std::string_view) override {}
  void stop_other_processes(int) override {}
  std::string describe() const override { return "one process"; }
};

}  // namespace

std::shared_ptr<Communicator> single_process_communicator() { return std::make_shared<SingleProcess>(); }

#ifndef CANNL_HAVE_MPI
bool mpi_built_in() { return false; }

std::shared_ptr<Communicator> mpi_communicator() {
  throw BackendUnavailable(
      "MPI: this cannl was built without MPI (CMake found no MPI library); install Debian's "
      "openmpi-bin and libopenmpi-dev (scripts/setup.sh does) and configure the build again");
}
#endif

}  // namespace cannl::runtime
