#pragma once
// The autotuner (semantics-backend.md 8.6): a drop-in for Context::compile that measures
// schedules on the context's own device and compiles the fastest one whose results match the
// default schedule's.
//
//   runtime::Routine mm = tune::tune(ctx, comp, "mm");          // instead of ctx.compile(comp, "mm")
//   tune::TuneReport report;
//   auto step = tune::tune(ctx, comp, "step", tune::TuneOptions::from_config(), &report);
//   std::cout << tune::format_report(report);                    // times and the winner's trace
//
// Candidates are a target record (a variant of the backend's: matmul blocking, tile threshold,
// team, Grid chunks; on a GPU the tile blocking) plus transforms of the optimized routine
// (CompileOptions), optionally under the materialize-all placement. Seeds: the serial baseline
// (CPU backends only: on a GPU it is one thread), the default schedule (the backend's: CPU or
// GPU), one-field sweeps of the target (on a GPU with matmul tiles, the blocking sketches:
// blocks of 32 x 32 to 128 x 128 cells, 2 x 2 to 8 x 8 per thread, 8- to 32-step slices, those
// the device can launch; and the default GPU schedule under other block sizes, scatter bucket
// counts and without the re-association licence) and (search_placements) the materialize-all
// default; then `rounds` beam rounds
// extend the `beam_width` fastest with a menu of moves (Split, Swap, Unroll, Retype to Grid or
// Vectorized, Privatize, Stage, Split_reduce, the target's neighbours). A proposal the legality
// oracle rejects is dropped before anything compiles.
//
// Every candidate is compiled and run in a twin of the context (Context::twin: copies of its
// buffers, so the caller's data is never touched), on the same inputs: the context's values
// where it holds them, fixed pseudo-random ones elsewhere. Its first run's outputs must equal the
// default schedule's, bit for bit unless re-association is licensed (config
// cpu_schedule_reassociate, on a GPU gpu_schedule_reassociate), else within 1e-3 of each
// output's largest magnitude; a candidate that differs never wins. Its time is the median of at
// least `repeats` runs (monotonic clock) after that first run, topped up for short routines
// (src/tune/measure.cpp: kTopUpMs of runs, at most kMaxRuns). A first run is never the time
// judged: when it takes 4 times the best median, one warm run is timed, and a candidate whose
// warm run still takes 4 times the best gets that run's time (it cannot win, and a serial
// baseline of a large matmul would eat the budget). A candidate whose generated code equals an
// earlier one's takes that one's time (CandidateResult::same_code_as) and never wins: that one
// stands for it (a candidate with the default's code is the default).
//
// The final round: the fastest few with code of their own, the default and the serial baseline
// are timed again side by side (rounds taking each in turn), and the winner is picked among
// these times only (search times were taken one at a time, each under the load of its moment):
// a candidate replaces the default only when it is at least 5% faster there (within a shared
// machine's noise the default stays). The report's times all come from that round. The default
// schedule is always measured (it is the reference and a seed, so the winner is never slower
// than it as measured); every other candidate only while `budget_s` lasts, final round
// included: a candidate is judged only when the budget left also holds the final round of the
// finalists so far, planned from what judging them cost (src/tune/final_round.h), and the final
// round is cut to what is left (fewer finalists, then fewer rounds; never the default or the
// serial baseline, and without room for one candidate none: the default stays).
//
// The winner is stored in the schedule cache (schedule_cache.h) under the program's digest, the
// target, the backend's fingerprint, the licences and the machine (CPU model, team), with the
// width of the search (SearchWidth); a later tune of the same program, in this process or
// another, compiles it without measuring anything, unless it asks for a wider search (a larger
// budget than one that cut the search short, more rounds, a wider beam, the sweeps): then it
// searches and overwrites the entry.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cannl/ir/assignments.h"
#include "cannl/ir/target.h"
#include "cannl/runtime/context.h"
#include "cannl/schedule/trace.h"

namespace cannl::tune {

/// One schedule the tuner tries: a target record for the compile and a trace of transforms of the
/// optimized routine (schedule::record(optimized, transforms)); traces name loops by position, so
/// they replay onto every compile of the program.
struct Candidate {
  std::string label;  // how it was made: "serial", "default", "default threads 1", "default + unroll i7"
  ir::Target target;
  schedule::ScheduleTrace trace;
  /// The placement arm (CompileOptions::materialize_all): the trace is of that arm's optimized
  /// routine.
  bool materialize_all = false;
};

enum class Verdict {
  Measured,     // compiled, results checked, timed
  WrongResult,  // its outputs differ from the default schedule's: never a winner
  Failed,       // its compile or run threw (the message is kept)
};

/// What the tuner found out about one candidate.
struct CandidateResult {
  std::string label;
  std::string target;  // describe_target
  std::string trace;   // schedule::print_trace of its trace
  Verdict verdict = Verdict::Measured;
  double ms = 0;       // median time of one run (Measured); the final round's when `final_round`
  std::string why;     // WrongResult: the first difference; Failed: the error
  /// The label of an earlier candidate whose generated code equals this one's: it took that one's
  /// search time instead of a second, noisy one, and it never wins (that candidate stands for it;
  /// a candidate with the default's code is the default).
  std::string same_code_as;
  /// Timed again in the final round, side by side with the default: `ms` is that round's time.
  /// The winner is picked among these only.
  bool final_round = false;
  /// What judging it cost, in seconds on the tuner's clock: its timed runs (`timing_s`, which
  /// each round of the final round repeats) and the rest (`setup_s`: its compile, its checked
  /// run). The budget plans the final round from them.
  double setup_s = 0, timing_s = 0;
};

/// Hooks for tests (and progress display): all optional.
struct TuneHooks {
  /// Times a candidate instead of the clock: gets the candidate and one run of it, returns
  /// milliseconds. Tests make the search deterministic with it.
  std::function<double(const Candidate&, const std::function<void()>& run)> measure;
  /// Times a candidate in the final round (the finalists, the default and the serial baseline
  /// side by side), once per round, instead of the clock; unset, `measure` (when set) times that
  /// round too. Tests make a candidate's final time differ from its search time with it.
  std::function<double(const Candidate&, const std::function<void()>& run)> measure_final;
  /// Called before each run of a candidate while it is judged (run 0 is the checked run), inside
  /// the clock's interval: a test makes a first run slow with it.
  std::function<void(const Candidate&, std::int64_t run)> before_run;
  /// Called after a candidate's first run in its twin, before its outputs are compared with the
  /// default schedule's (a test plants a wrong result here).
  std::function<void(const Candidate&, runtime::Context& twin, const runtime::Routine& routine)> after_check_run;
  /// Seeds added after the built-in ones (tests), made for the optimized routine.
  std::function<std::vector<Candidate>(const ir::LoweredRoutine& optimized, const ir::Target& target)> extra_seeds;
  /// Seconds on the tuner's clock, which the budget and the costs of candidates are counted on,
  /// instead of the monotonic clock's; tests give a fake clock that their `measure` and
  /// `measure_final` advance. The times of runs (`ms`) do not come from it.
  std::function<double()> clock_s;
  /// Called once per candidate as soon as it is judged (cannl tune prints progress with it).
  std::function<void(const CandidateResult&)> on_candidate;
};

struct TuneOptions {
  int beam_width = 2;     // config autotune_beam_width
  int rounds = 2;         // config autotune_rounds
  int repeats = 3;        // config autotune_repeats
  double budget_s = 60;   // config autotune_budget_s
  /// Candidates built at once before they are timed one by one (config autotune_compile_batch;
  /// 0: the hardware threads).
  int compile_batch = 0;
  bool log = false;       // config autotune_log: log_files/<exe>/autotune.log
  bool use_cache = true;  // config autotune_cache
  std::filesystem::path cache_dir;  // config autotune_cache_dir; empty: build_files/<exe>/schedule_cache
  /// Seeds include the one-field sweeps of the target (false: the default schedule and the serial
  /// baseline only, for a quick search or a test).
  bool sweep_target = true;
  /// Placement search (config autotune_placements): the default schedule of the materialize-all
  /// placement (CompileOptions::materialize_all) is a seed too, and the beam extends it like the
  /// others; the winner keeps its placement.
  bool search_placements = false;
  TuneHooks hooks;

  /// The fields from their config keys (ConfigError for a value out of range: beam width and
  /// rounds 0..64, repeats 1..10000, budget >= 0).
  static TuneOptions from_config();
};

struct TuneReport {
  enum class Outcome {
    Searched,     // candidates were measured
    CacheReplay,  // the schedule cache held the winner: nothing was measured
    NotTunable,   // the backend has no schedule search (the interpreter): its default compile
  };
  Outcome outcome = Outcome::Searched;
  std::string routine;
  std::vector<CandidateResult> candidates;  // in the order judged
  CandidateResult winner;
  /// Times of the serial baseline, the default schedule and the winner, all from the final round
  /// (ms; the baseline's is that of the candidate with its code; 0 when not measured; from the
  /// cache entry on a replay).
  double baseline_ms = 0, default_ms = 0, tuned_ms = 0;
  double search_s = 0;      // wall time spent searching (0 on a replay)
  int compiles = 0;         // candidates compiled (0 on a replay)
  bool out_of_budget = false;  // the search stopped because budget_s ran out
  std::string cache_key;
};

/// Compiles `comp` into `ctx` like ctx.compile(comp, name) with the fastest schedule found (see
/// the file comment); the caller's buffers are read, never written, by the search. Throws what
/// ctx.compile throws for the program itself.
runtime::Routine tune(runtime::Context& ctx, const ir::Comp& comp, const std::string& name,
                      const TuneOptions& options = TuneOptions::from_config(), TuneReport* report = nullptr);

/// The tunable fields of a target record in one line:
///   "threads 2 chunks 0 gemm 12x2 kc 384 nc 512 mc 3072 min_tile_work 4096"
std::string describe_target(const ir::Target& target);

/// The report as lines for people: outcome, baseline / default / tuned times and speed-ups, the
/// winner's target and trace.
std::string format_report(const TuneReport& report);

}  // namespace cannl::tune
