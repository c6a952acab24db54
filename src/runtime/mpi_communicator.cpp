// The MPI communicator: MPI_COMM_WORLD's processes, every collective polled against a deadline.
//
// A blocking MPI collective waits forever for a rank that died or hangs, and names nobody. So
// every collective here starts with an arrival round (each rank sends its collective number to
// every other rank and receives theirs, non-blocking) polled until config key
// `distributed_timeout_s`: a rank whose message is missing then is named in the error. Only when
// every rank arrived does the data move (MPI_Iallreduce, polled the same way). Errors come back
// as return codes (MPI_ERRORS_RETURN on our communicator), never as MPI's own abort.
//
// A collective that fails leaves requests in flight: a late rank's message, a sum that never
// finished. MPI would still write them into the memory the requests name, so that memory is the
// communicator's (InFlight), never the caller's stack or buffer, and a failed collective's
// receives are cancelled and what cannot be cancelled keeps its memory until it completes or the
// process ends (MpiCommunicator::abandon).
#ifdef CANNL_HAVE_MPI

// The C API only: Open MPI's and MPICH's C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
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

// A sum moves its data in pieces of at most this many bytes, each copied into the communicator's
// memory and back: what a failed sum leaves in flight never names the caller's buffer, and the
// copy costs at most this much memory (a memcpy is far cheaper than the transfer between ranks).
constexpr std::size_t kPieceBytes = std::size_t{64} << 20;

/// The memory one collective step's requests read and write, with the requests: the arrival
/// round's numbers, or the piece of a sum being reduced in place. Owned by the communicator, so
/// that it outlives requests a failure leaves in flight.
struct InFlight {
  std::vector<MPI_Request> receives, sends;
  MPI_Request collective = MPI_REQUEST_NULL;
  std::vector<long long> arrivals;  // per rank, the collective number it sent (-1: none yet)
  long long mine = 0;               // the number this rank sends
  std::vector<std::byte> piece;     // a sum's piece, reduced in place

  /// Whether every request completed (or was never started).
  bool idle() const {
    auto null = [](MPI_Request r) { return r == MPI_REQUEST_NULL; };
    return collective == MPI_REQUEST_NULL && std::all_of(receives.begin(), receives.end(), null) &&
           std::all_of(sends.begin(), sends.end(), null);
  }
  /// Tests every request once (completed ones become MPI_REQUEST_NULL); errors are ignored: the
  /// collective failed already.
  void test_all() {
    auto test = [](MPI_Request& r) {
      int done = 0;
      if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    };
    for (auto& r : receives) test(r);
    for (auto& r : sends) test(r);
    test(collective);
  }
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
    // Finalize waits for the other ranks: after a failure it could wait forever. A program may
    // have finalized MPI itself (after a failure, to end cleanly): twice is an abort.
    if (owns_mpi_ && !broken_ && !finalized()) MPI_Finalize();
    // Requests still in flight may yet write into their memory (MPI may progress at exit): it is
    // left to the ending process rather than freed under them, reachable from a static so that
    // leak checkers do not count it. After MPI_Finalize nothing writes.
    if (finalized()) return;
    static auto* const kept_until_exit = new std::vector<std::unique_ptr<InFlight>>();
    for (auto& flight : abandoned_) {
      flight->test_all();
      if (!flight->idle()) kept_until_exit->push_back(std::move(flight));
    }
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
    // Pieces one after another (the same on every rank): a bounded copy each, and an int count.
    int type_bytes = 0;
    MPI_Type_size(type, &type_bytes);
    const std::size_t cell = static_cast<std::size_t>(type_bytes);
    const std::size_t piece = kPieceBytes / cell;
    for (std::size_t at = 0; at < count; at += piece) {
      const std::size_t n = std::min(piece, count - at);
      sum_piece(static_cast<std::byte*>(data) + at * cell, n, cell, type, what);
    }
  }

  void sum_piece(std::byte* data, std::size_t count, std::size_t cell, MPI_Datatype type, std::string_view what) {
    InFlight& f = *flight_;
    f.piece.assign(data, data + count * cell);
    try {
      check(MPI_Iallreduce(MPI_IN_PLACE, f.piece.data(), static_cast<int>(count), type, MPI_SUM, comm_, &f.collective),
            what, -1);
      Deadline deadline;
      int done = 0;
      for (;;) {
        check(MPI_Test(&f.collective, &done, MPI_STATUS_IGNORE), what, -1);
        if (done) break;
        if (deadline.passed())
          fail("rank " + std::to_string(rank_) + ": the sum '" + std::string(what) + "' did not complete within " +
               seconds_text(deadline) + " although every rank had arrived; a rank failed during it");
        deadline.pause(true);
      }
    } catch (...) {
      abandon();
      throw;
    }
    std::memcpy(data, f.piece.data(), count * cell);
  }

  /// Every rank sends its collective number to every other one; returns when all arrived.
  void arrive(std::string_view what) {
    if (broken_)
      throw DistributedError("rank " + std::to_string(rank_) + ": '" + std::string(what) +
                             "' after an earlier failure of this distributed run");
    ++collective_;
    const auto peers = static_cast<std::size_t>(size_);
    InFlight& f = *flight_;
    f.arrivals.assign(peers, -1);
    f.receives.assign(peers, MPI_REQUEST_NULL);
    f.sends.assign(peers, MPI_REQUEST_NULL);
    f.mine = collective_;
    try {
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        const auto k = static_cast<std::size_t>(p);
        check(MPI_Irecv(&f.arrivals[k], 1, MPI_LONG_LONG, p, kArrivalTag, comm_, &f.receives[k]), what, p);
        check(MPI_Isend(&f.mine, 1, MPI_LONG_LONG, p, kArrivalTag, comm_, &f.sends[k]), what, p);
      }
      wait_for_peers(f.receives, f.sends, what);
    } catch (...) {
      abandon();
      throw;
    }
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && f.arrivals[static_cast<std::size_t>(p)] != f.mine)
        fail("rank " + std::to_string(p) + " is at collective #" + std::to_string(f.arrivals[static_cast<std::size_t>(p)]) +
             " while rank " + std::to_string(rank_) + " is at #" + std::to_string(f.mine) + " ('" + std::string(what) +
             "'): the ranks do not run the same program");
  }

  /// After a failure in the current collective step: its receives are cancelled and completed
  /// (MPI_Cancel, then MPI_Wait, which a cancelled request cannot block), so no late message lands
  /// anywhere; sends and a sum cannot be withdrawn (cancelling a collective is erroneous), so
  /// when they are still in flight their memory is kept, with them, for the communicator's life.
  void abandon() {
    for (MPI_Request& r : flight_->receives) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    flight_->test_all();
    if (!flight_->idle()) {
      abandoned_.push_back(std::move(flight_));
      flight_ = std::make_unique<InFlight>();
    }
  }

  static bool finalized() {
    int done = 0;
    MPI_Finalized(&done);
    return done != 0;
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
  /// The current collective step's requests and memory, reused step after step.
  std::unique_ptr<InFlight> flight_ = std::make_unique<InFlight>();
  /// Failed steps whose sends or sum were still in flight: kept until the communicator ends.
  std::vector<std::unique_ptr<InFlight>> abandoned_;
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
