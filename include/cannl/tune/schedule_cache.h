#pragma once
// The tuner's schedule cache (semantics-backend.md 8.7): the winning schedule of a routine,
// stored on disk as its target fields and trace, keyed by everything that decides whether it
// still applies and still wins:
//  * the program: schedule::program_digest of the optimized routine (nodes named by position,
//    symbols by first appearance, so the same program built again or in another process has the
//    same digest);
//  * the target record the search started from (vector width, runtime, team, chunks, blocking);
//  * the backend's fingerprint (the cc backend: compiler identity and flags; a GPU backend: the
//    device);
//  * the machine (MachineIdentity): the CPU model and the team a CPU routine runs with
//    (backends::cc::routine_team, the same resolution the code that runs it gets: the target's
//    threads, config cc_threads, when set; else the OpenMP runtime's default team, resolved once
//    per process as the runtime reads it, from OMP_NUM_THREADS or the hardware threads), since a
//    schedule that wins with 4 threads may lose with 64;
//  * the numeric licence (cpu_schedule_reassociate, or gpu_schedule_reassociate on a GPU target,
//    decides how results were checked).
// An entry also records how wide its search was (SearchWidth) and answers only a search no wider.
// One file per key, `<dir>/<key>.schedule`, written atomically; its last line is the SHA-256 of
// the rest, so a torn, edited or foreign file is recognized, warned about once and ignored (the
// routine is tuned again and the entry rewritten).
//
//   const std::string key = tune::schedule_cache_key(digest, backend.target(), backend.fingerprint(),
//                                                    tune::this_machine(backend.target()));
//   if (auto hit = tune::load_cached_schedule(dir, key)) ... compile with hit->target, hit->trace
//   tune::store_cached_schedule(dir, entry);

#include <filesystem>
#include <optional>
#include <string>

#include "cannl/ir/target.h"
#include "cannl/schedule/trace.h"

namespace cannl::tune {

/// How wide the search behind an entry was. An entry answers a later search only when its search
/// was at least as wide: one cut short by its budget, of fewer rounds, a narrower beam or without
/// the target sweeps may have missed what the asked one would find (a later search then runs and
/// overwrites it).
///   SearchWidth cut{.complete = false, .budget_s = 0};   // a search with autotune_budget_s=0
///   cut.covers({.budget_s = 60}) == false;  SearchWidth{.budget_s = 60}.covers(cut) == true
struct SearchWidth {
  bool complete = true;  // it ended by itself, not because its budget ran out
  double budget_s = 0;
  int rounds = 0;
  int beam_width = 0;
  bool sweep_target = false;

  /// Whether a search of this width finds what one of width `asked` would (as far as the
  /// settings tell): as many rounds, as wide a beam, the sweeps if asked for, and either it ran
  /// to its end or its budget was at least the one asked for.
  bool covers(const SearchWidth& asked) const;
};

struct CachedSchedule {
  std::string key;
  std::string label;  // the winner's label, for reports
  ir::Target target;  // the backend's target with the winner's tunable fields
  schedule::ScheduleTrace trace;
  bool materialize_all = false;  // the placement (CompileOptions::materialize_all)
  double baseline_ms = 0, default_ms = 0, tuned_ms = 0;  // as measured when it was tuned
  SearchWidth search;  // the search that found it
};

/// The machine a schedule is timed on, as far as which schedule wins depends on it beyond the
/// backend's fingerprint (whose compile flags say `-march=native`, not which CPU that is).
///   MachineIdentity{"AMD EPYC 7B13 64-Core Processor", 16}
struct MachineIdentity {
  std::string cpu_model;  // "unknown CPU" where the system does not say
  int threads = 1;        // the team of a CPU routine of the target
};

/// This machine for routines of `target`: the CPU model (Linux: /proc/cpuinfo's "model name", or
/// its CPU implementer and part; macOS: machdep.cpu.brand_string; elsewhere "unknown CPU") and
/// the team its routines run with (backends::cc::routine_team: target.threads when set, 1
/// without a parallel runtime or on a GPU target, else the OpenMP runtime's default team,
/// resolved once per process: OMP_NUM_THREADS changed later changes neither the team nor this).
MachineIdentity this_machine(const ir::Target& target);

/// The key (64 hex digits) of a program's entry; reads config cpu_schedule_reassociate (on a
/// target with workgroups gpu_schedule_reassociate).
std::string schedule_cache_key(const std::string& program_digest, const ir::Target& target,
                               const std::string& backend_fingerprint, const MachineIdentity& machine);

/// The folder of config autotune_cache_dir, or build_files/<exe>/schedule_cache/ (not created:
/// store_cached_schedule creates it).
std::filesystem::path schedule_cache_dir();

/// The entry for `key` in `dir`, its tunable target fields applied to `base` (the backend's
/// target); nullopt when there is none, or (with one warning naming the file and the problem)
/// when it is damaged or holds another key.
std::optional<CachedSchedule> load_cached_schedule(const std::filesystem::path& dir, const std::string& key,
                                                   const ir::Target& base);

/// Writes `entry` as `<dir>/<entry.key>.schedule` atomically (the folder is created). Throws
/// IoError when it cannot be written.
void store_cached_schedule(const std::filesystem::path& dir, const CachedSchedule& entry);

/// The file of `key` in `dir` (tests damage it).
std::filesystem::path cached_schedule_path(const std::filesystem::path& dir, const std::string& key);

}  // namespace cannl::tune
