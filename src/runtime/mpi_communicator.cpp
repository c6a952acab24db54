// The MPI communicator: MPI_COMM_WORLD's processes, every collective polled against a deadline.
//
// A blocking MPI collective waits forever for a rank that died or hangs, and names nobody. So
// every collective here starts with an arrival round (each rank sends its collective number to
// every other rank and receives theirs, non-blocking) polled until config key
// `distributed_timeout_s`: a rank whose message is missing then is named in the error. Only when
// every rank arrived does the data move (MPI_Iallreduce, polled the same way). Errors come back
// as return codes (MPI_ERRORS_RETURN on our communicator), never as MPI's own abort.
#ifdef CANNL_HAVE_MPI

// The C API only: Open MPI's and MPICH's C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "cannl/runtime/communicator.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace cannl::runtime {

namespace {

constexpr int kArrivalTag = 4242;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

class Deadline {
 public:
  Deadline() : seconds_(config::get_double("distributed_timeout_s")) {
    if (!(seconds_ > 0))
      throw ConfigError("config key 'distributed_timeout_s' = '" + config::get("distributed_timeout_s") + "' (from " +
                        config::source_of("distributed_timeout_s") + "): expected a number of seconds > 0");
    end_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(seconds_));
  }
  bool passed() const { return std::chrono::steady_clock::now() >= end_; }
  double seconds() const { return seconds_; }
  /// Between two polls: yield at first (a step's collective is usually quick), then sleep a
  /// little so that a waiting rank leaves the cores to the ranks it waits for. `moving`: data is
  /// in flight between ranks that all arrived, and every poll lets MPI's non-blocking collective
  /// progress (libnbc advances only inside MPI_Test), so only yield.
  void pause(bool moving = false) {
    if (moving || ++polls_ < 100) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  double seconds_;
  std::chrono::steady_clock::time_point end_;
  int polls_ = 0;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  ~MpiCommunicator() override {
    // Finalize waits for the other ranks: after a failure it could wait forever.
    if (owns_mpi_ && !broken_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(std::span<double> values, std::string_view what) override {
    sum(values.data(), values.size(), MPI_DOUBLE, what);
  }
  void allreduce_sum(std::span<float> values, std::string_view what) override {
    sum(values.data(), values.size(), MPI_FLOAT, what);
  }

  void barrier(std::string_view what) override { arrive(what); }

  void stop_other_processes(int exit_code) override {
    broken_ = true;
    MPI_Abort(MPI_COMM_WORLD, exit_code);  // ends the job; it does not return under Open MPI
  }

  std::string describe() const override {
    return "MPI (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  }

 private:
  void sum(void* data, std::size_t count, MPI_Datatype type, std::string_view what) {
    arrive(what);
    // MPI counts are ints: a larger buffer goes in pieces, one after another (the same on every rank).
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    int type_bytes = 0;
    MPI_Type_size(type, &type_bytes);
    for (std::size_t at = 0; at < count; at += kPiece) {
      const std::size_t n = std::min(kPiece, count - at);
      sum_piece(static_cast<char*>(data) + at * static_cast<std::size_t>(type_bytes), static_cast<int>(n), type, what);
    }
  }

  void sum_piece(void* data, int count, MPI_Datatype type, std::string_view what) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, MPI_SUM, comm_, &request), what, -1);
    Deadline deadline;
    int done = 0;
    for (;;) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what, -1);
      if (done) return;
      if (deadline.passed())
        fail("rank " + std::to_string(rank_) + ": the sum '" + std::string(what) + "' did not complete within " +
             seconds_text(deadline) + " although every rank had arrived; a rank failed during it");
      deadline.pause(true);
    }
  }

  /// Every rank sends its collective number to every other one; returns when all arrived.
  void arrive(std::string_view what) {
    if (broken_)
      throw DistributedError("rank " + std::to_string(rank_) + ": '" + std::string(what) +
                             "' after an earlier failure of this distributed run");
    ++collective_;
    const int peers = size_;
    std::vector<long long> received(static_cast<std::size_t>(peers), -1);
    std::vector<MPI_Request> receives(static_cast<std::size_t>(peers), MPI_REQUEST_NULL);
    std::vector<MPI_Request> sends(static_cast<std::size_t>(peers), MPI_REQUEST_NULL);
    const long long mine = collective_;
    for (int p = 0; p < peers; ++p) {
      if (p == rank_) continue;
      check(MPI_Irecv(&received[static_cast<std::size_t>(p)], 1, MPI_LONG_LONG, p, kArrivalTag, comm_,
                      &receives[static_cast<std::size_t>(p)]),
            what, p);
      check(MPI_Isend(&mine, 1, MPI_LONG_LONG, p, kArrivalTag, comm_, &sends[static_cast<std::size_t>(p)]), what, p);
    }
    wait_for_peers(receives, sends, what);
    for (int p = 0; p < peers; ++p)
      if (p != rank_ && received[static_cast<std::size_t>(p)] != mine)
        fail("rank " + std::to_string(p) + " is at collective #" + std::to_string(received[static_cast<std::size_t>(p)]) +
             " while rank " + std::to_string(rank_) + " is at #" + std::to_string(mine) + " ('" + std::string(what) +
             "'): the ranks do not run the same program");
  }

  void wait_for_peers(std::vector<MPI_Request>& receives, std::vector<MPI_Request>& sends, std::string_view what) {
    Deadline deadline;
    for (;;) {
      std::vector<int> missing;
      for (int p = 0; p < size_; ++p) {
        for (auto* requests : {&receives, &sends}) {
          MPI_Request& r = (*requests)[static_cast<std::size_t>(p)];
          if (r == MPI_REQUEST_NULL) continue;
          int done = 0;
          check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what, p);
          if (!done && (missing.empty() || missing.back() != p)) missing.push_back(p);
        }
      }
      if (missing.empty()) return;
      if (deadline.passed()) {
        std::string names;
        for (int p : missing) names += (names.empty() ? "" : ", ") + std::to_string(p);
        fail(std::string(missing.size() == 1 ? "rank " : "ranks ") + names + " did not reach '" +
             std::string(what) + "' within " + seconds_text(deadline) + " (rank " + std::to_string(rank_) +
             " waited; config key distributed_timeout_s): it died or hangs; stopping the run");
      }
      deadline.pause();
    }
  }

  void check(int code, std::string_view what, int peer) {
    if (code == MPI_SUCCESS) return;
    fail((peer >= 0 ? "rank " + std::to_string(peer) + " failed during '" : "MPI failed during '") +
         std::string(what) + "' (seen by rank " + std::to_string(rank_) + "): " + mpi_error_text(code));
  }

  [[noreturn]] void fail(const std::string& message) {
    broken_ = true;
    throw DistributedError(message);
  }

  static std::string seconds_text(const Deadline& d) {
    std::string s = std::to_string(d.seconds());
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s + " s";
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  long long collective_ = 0;
  bool owns_mpi_ = false;
  bool broken_ = false;
};

}  // namespace

bool mpi_built_in() { return true; }

std::shared_ptr<Communicator> mpi_communicator() {
  // One per process: MPI is initialized once and finalized when the program exits.
  static std::shared_ptr<Communicator> world = std::make_shared<MpiCommunicator>();
  return world;
}

}  // namespace cannl::runtime

#endif  // CANNL_HAVE_MPI
