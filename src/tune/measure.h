#pragma once
// How the tuner judges one candidate: compiled in a fresh twin of the caller's context, run once
// on the shared inputs, its outputs compared with the reference (the default schedule's), then
// timed (the median of at least `repeats` runs on a monotonic clock, more for short routines).
//
//   Bench bench(ctx.twin(), comp, "mm", 3);
//   CandidateResult def = bench.judge(default_candidate, /*reference=*/true, hooks);
//   CandidateResult other = bench.judge(candidate, false, hooks);   // WrongResult if it differs

#include <map>
#include <string>
#include <vector>

#include "cannl/runtime/context.h"
#include "cannl/tune/tune.h"

namespace cannl::tune {

/// Seconds on the tuner's clock: TuneHooks::clock_s when set, else the monotonic clock's.
double tuner_seconds(const TuneHooks& hooks);

/// Whether a candidate that took `ms` is so far behind `best_ms` (4 times) that it cannot win
/// however it is timed again: it is not timed further.
bool beyond_hope(double ms, double best_ms);

class Bench {
 public:
  /// `pristine`: a twin of the caller's context that nothing runs in; each candidate gets its own
  /// twin of it, so every check run starts from the same data.
  Bench(runtime::Context pristine, const ir::Comp& comp, std::string name, int repeats);

  ir::Target target() const { return pristine_.backend().target(); }

  /// Compiles, checks and times `c`. With `reference`, its outputs become the reference of later
  /// candidates. `best_ms`: the best median so far (infinity for none): a candidate whose warm
  /// run (the one after the checked run, taken only when the checked run is already 4 times
  /// slower) is 4 times slower is given that run's time. A candidate whose code equals an earlier
  /// one's takes that one's time and names it (CandidateResult::same_code_as). A candidate's
  /// failure is its verdict (Verdict::Failed with the message), except the reference's, which is
  /// rethrown (the program's own error). Sets the result's `timing_s` (its timed runs on the
  /// tuner's clock).
  CandidateResult judge(const Candidate& c, bool reference, double best_ms, const TuneHooks& hooks);

  /// Builds the code of `cs` at once (Context::prebuild), so that judging them one by
  /// one compiles nothing; best effort (a failing candidate fails again in its judge).
  void prebuild(const std::vector<Candidate>& cs);

  /// The finalists timed again, in `rounds` rounds taking each in turn (a burst of load on the
  /// machine falls on all of them): per finalist the median of its round medians, in ms; each
  /// round's time from TuneHooks::measure_final (else measure) when set. A finalist whose warm-up
  /// run takes 4 times the fastest one's gets one run a round (the serial baseline of a large
  /// matmul: reported, it cannot win). Throws what compiling or running a finalist throws (each
  /// was judged already).
  std::vector<double> confirm(const std::vector<Candidate>& finalists, int rounds, const TuneHooks& hooks);

 private:
  runtime::Context pristine_;
  const ir::Comp& comp_;
  std::string name_;
  int repeats_;
  /// Licensed re-association (config cpu_schedule_reassociate; gpu_schedule_reassociate on a
  /// target with workgroups): outputs may differ from the reference by rounding, within the
  /// tolerance; otherwise bit for bit.
  bool tolerant_;
  /// Values given to inputs the caller's context has not initialized, by node id (the same for
  /// every candidate).
  std::map<int, std::vector<double>> made_up_inputs_;
  /// The reference's outputs by node id: bytes, and values when comparing with tolerance.
  std::map<int, std::vector<std::byte>> reference_bytes_;
  std::map<int, std::vector<double>> reference_values_;
  /// The generated code of every candidate timed so far (source and kernel library blocking):
  /// its label and time.
  std::map<std::string, std::pair<std::string, double>> timed_code_;

  /// A candidate compiled in a fresh twin, its inputs filled.
  struct Instance {
    runtime::Context twin;
    runtime::Routine routine;
    std::int64_t runs = 0;
    /// One run: static indices 0 the first time, then stepping through their ranges.
    void run();
  };
  Instance instantiate(const Candidate& c);
  /// What decides a candidate's speed: its routine's source and its kernel library's blocking.
  static std::string code_of(const Candidate& c, const runtime::Routine& routine);

  void fill_inputs(runtime::Context& twin, const runtime::Routine& routine);
  /// "" when `routine`'s outputs in `twin` match the reference, else the first difference.
  std::string compare_outputs(runtime::Context& twin, const runtime::Routine& routine) const;
  void keep_reference(runtime::Context& twin, const runtime::Routine& routine);
  /// The median of at least `repeats_` timed runs, topped up for short routines (kTopUpMs of runs,
  /// at most kMaxRuns, measure.cpp), or the hook's time; a hopeless candidate's one warm run.
  double time_ms(const Candidate& c, const std::function<void()>& run, double first_run_ms, double best_ms,
                 const TuneHooks& hooks) const;
  /// Timed runs a round for a routine whose warm run took `warm_ms`: at least `repeats_`, more
  /// for short ones.
  int runs_for(double warm_ms) const;
};

}  // namespace cannl::tune
