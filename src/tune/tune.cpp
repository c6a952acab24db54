// tune::tune: seeds, beam rounds, the result check and the schedule cache (see tune.h).
#include "cannl/tune/tune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "cannl/schedule/trace.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "cannl/support/log.h"
#include "cannl/tune/schedule_cache.h"
#include "tune/candidates.h"
#include "tune/final_round.h"
#include "tune/measure.h"
#include "tune/target_fields.h"
#include "tune/tune_log.h"

namespace cannl::tune {

namespace {

/// Proposals taken from one beam member per round: enough for its target's neighbours and the
/// first transform moves, few enough that a round ends within a budget.
constexpr std::size_t kMovesPerMember = 24;
/// A round that improves the best time by less than this fraction ends the search.
constexpr double kMinGain = 0.01;
/// Rounds of the final timing of the finalists side by side.
constexpr int kConfirmRounds = 5;
/// A candidate replaces the default schedule only when it is at least this fraction faster.
constexpr double kMinWin = 0.05;
/// Candidates timed again besides the default (and the serial baseline): the beam, within these
/// bounds.
constexpr int kFinalists = 2;
constexpr int kMaxFinalists = 4;

bool less_ms(const CandidateResult& a, const CandidateResult& b) { return a.ms < b.ms; }

class Search {
 public:
  Search(runtime::Context& ctx, const ir::Comp& comp, const std::string& name, const TuneOptions& options,
         const ir::LoweredRoutine& optimized, TuneReport& report)
      : name_(name), options_(options), optimized_(optimized), report_(report),
        bench_(ctx.twin(), comp, name, options.repeats), start_s_(tuner_seconds(options.hooks)) {
    if (options.search_placements) materialized_ = ctx.optimized_routine(comp, name, {.materialize_all = true});
  }

  /// Runs seeds and rounds; returns the winner (the default schedule at worst).
  Candidate run() {
    const ir::Target base = bench_.target();
    std::vector<Candidate> seeds = seed_candidates(optimized_, base, options_.sweep_target);
    if (options_.hooks.extra_seeds)
      for (auto& c : options_.hooks.extra_seeds(optimized_, base)) seeds.push_back(std::move(c));
    if (materialized_) {
      Candidate all = seed_candidates(*materialized_, base, false).front();
      all.label = "materialize-all " + all.label;
      all.materialize_all = true;
      seeds.insert(seeds.begin() + 1, std::move(all));  // right after the reference
    }
    judge_all(seeds);
    for (int round = 0; round < options_.rounds && !report_.out_of_budget; ++round) {
      const double before = best_ms();
      std::vector<Candidate> proposals;
      for (const Candidate* member : beam()) {
        auto moves = menu_moves(optimized_for(*member), *member, base);
        if (moves.size() > kMovesPerMember) moves.resize(kMovesPerMember);
        for (auto& m : moves) proposals.push_back(std::move(m));
      }
      judge_all(proposals);
      if (best_ms() > before * (1.0 - kMinGain)) break;
    }
    final_round();
    report_.search_s = seconds_since_start();
    return winner();
  }

 private:
  std::string name_;
  const TuneOptions& options_;
  const ir::LoweredRoutine& optimized_;
  /// The optimized routine of the materialize-all placement (search_placements).
  std::optional<ir::LoweredRoutine> materialized_;
  TuneReport& report_;
  Bench bench_;
  double start_s_;
  /// What judging every candidate so far took together (s), for the expected cost of the next.
  double judged_s_ = 0;
  std::set<std::string> seen_;
  /// The measured candidates, parallel to their results in report_.candidates (by index).
  std::vector<std::pair<Candidate, std::size_t>> measured_;

  const ir::LoweredRoutine& optimized_for(const Candidate& c) const {
    return c.materialize_all && materialized_ ? *materialized_ : optimized_;
  }

  double seconds_since_start() const { return tuner_seconds(options_.hooks) - start_s_; }

  /// Whether the budget still holds `next_s` more of search and the final round of the
  /// finalists so far: the search stops early enough for the final round.
  bool budget_holds(double next_s) const {
    return seconds_since_start() + next_s + final_round_cost(kConfirmRounds) < options_.budget_s;
  }

  /// What judging the next candidate is expected to take: the mean of those judged so far.
  double expected_judge_s() const {
    return report_.candidates.empty() ? 0 : judged_s_ / static_cast<double>(report_.candidates.size());
  }

  static std::string signature(const Candidate& c) {
    return target_fields_text(c.target) + "\n" + schedule::print_trace(c.trace);
  }

  int compile_batch() const {
    if (options_.compile_batch > 0) return options_.compile_batch;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  /// Judges `cs` in order, a batch at a time: the batch's code is built at once (the compiler
  /// processes in parallel), then its candidates are timed one by one with no compiler running.
  /// Batches stay small so that a budget running out wastes few builds.
  void judge_all(const std::vector<Candidate>& cs) {
    const std::size_t batch = static_cast<std::size_t>(compile_batch());
    for (std::size_t first = 0; first < cs.size() && !report_.out_of_budget; first += batch) {
      const std::size_t last = std::min(cs.size(), first + batch);
      if (batch > 1) {
        std::vector<Candidate> unseen;
        std::set<std::string> signatures;
        for (std::size_t k = first; k < last; ++k)
          if (!seen_.contains(signature(cs[k])) && signatures.insert(signature(cs[k])).second) unseen.push_back(cs[k]);
        if (unseen.size() > 1 && budget_holds(expected_judge_s())) bench_.prebuild(unseen);
      }
      for (std::size_t k = first; k < last; ++k) judge(cs[k]);
    }
  }

  void judge(const Candidate& c) {
    if (!seen_.insert(signature(c)).second) return;
    const bool reference = report_.candidates.empty();  // the default schedule, judged first
    if (!reference && !budget_holds(expected_judge_s())) {
      report_.out_of_budget = true;
      return;
    }
    const double started = tuner_seconds(options_.hooks);
    CandidateResult result = bench_.judge(c, reference, best_ms(), options_.hooks);
    const double took = tuner_seconds(options_.hooks) - started;
    judged_s_ += took;
    result.setup_s = std::max(0.0, took - result.timing_s);
    ++report_.compiles;
    if (reference && result.verdict != Verdict::Measured)
      throw InternalError("tune: the default schedule of routine '" + name_ + "' gave no time: " + result.why);
    report_.candidates.push_back(result);
    if (result.verdict == Verdict::Measured) measured_.emplace_back(c, report_.candidates.size() - 1);
    if (options_.hooks.on_candidate) options_.hooks.on_candidate(result);
  }

  const CandidateResult& result_of(const std::pair<Candidate, std::size_t>& m) const {
    return report_.candidates[m.second];
  }

  double best_ms() const {
    double best = INFINITY;
    for (const auto& m : measured_) best = std::min(best, result_of(m).ms);
    return best;
  }

  std::vector<const Candidate*> beam() const {
    std::vector<const Candidate*> out;
    for (std::size_t m : fastest(options_.beam_width, false)) out.push_back(&measured_[m].first);
    return out;
  }

  /// Indices into measured_ of the `count` fastest measured candidates (ties: the one judged
  /// first); `own_code_only`: of those whose code is not the same as an earlier one's.
  std::vector<std::size_t> fastest(int count, bool own_code_only) const {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < measured_.size(); ++i)
      if (!own_code_only || result_of(measured_[i]).same_code_as.empty()) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return less_ms(result_of(measured_[a]), result_of(measured_[b])); });
    if (order.size() > static_cast<std::size_t>(std::max(count, 0))) order.resize(static_cast<std::size_t>(count));
    return order;
  }

  /// The index into measured_ of the candidate whose code the serial baseline runs: itself, or
  /// the one it has the same code as; nullopt when it was not measured (a GPU, a budget of 0).
  std::optional<std::size_t> baseline_code() const {
    std::string owner;
    for (const auto& m : measured_)
      if (m.first.label == "serial") owner = result_of(m).same_code_as.empty() ? "serial" : result_of(m).same_code_as;
    for (std::size_t i = 0; i < measured_.size(); ++i)
      if (!owner.empty() && measured_[i].first.label == owner && result_of(measured_[i]).same_code_as.empty()) return i;
    return std::nullopt;
  }

  /// The finalists as the search stands: indices into measured_ of the default schedule and the
  /// serial baseline's code (`required`: the winner's times are compared with theirs) and of the
  /// fastest few with code of their own, fastest first (`optional`). A candidate beyond hope
  /// against the best is no finalist, and a baseline beyond hope against the default keeps its
  /// search time (the serial run of a large matmul takes seconds; it is reported, it cannot win).
  struct Finalists {
    std::vector<std::size_t> required, optional;
  };
  Finalists finalists() const {
    Finalists f;
    if (measured_.empty()) return f;
    f.required.push_back(0);
    std::optional<std::size_t> baseline = baseline_code();
    if (baseline && beyond_hope(result_of(measured_[*baseline]).ms, result_of(measured_.front()).ms)) baseline.reset();
    if (baseline && *baseline != 0) f.required.push_back(*baseline);
    const double best = best_ms();
    for (std::size_t i : fastest(std::clamp(options_.beam_width, kFinalists, kMaxFinalists), true))
      if (!beyond_hope(result_of(measured_[i]).ms, best) && std::find(f.required.begin(), f.required.end(), i) == f.required.end())
        f.optional.push_back(i);
    return f;
  }

  std::vector<FinalistCost> costs_of(const std::vector<std::size_t>& indices) const {
    std::vector<FinalistCost> costs;
    for (std::size_t i : indices) costs.push_back({result_of(measured_[i]).setup_s, result_of(measured_[i]).timing_s});
    return costs;
  }

  /// What the final round of the finalists so far would take at `rounds` rounds (0 when there
  /// would be none: the default alone).
  double final_round_cost(int rounds) const {
    const Finalists f = finalists();
    if (f.required.size() + f.optional.size() < 2) return 0;
    return plan_final_round(costs_of(f.required), costs_of(f.optional), rounds, INFINITY).cost_s;
  }

  /// The final round: the finalists timed again side by side (bench_.confirm), as many of them
  /// and as many rounds as the budget left holds (plan_final_round). The winner is picked among
  /// these times only: search times were taken one candidate at a time, each under the load the
  /// machine had then, and a candidate sharing another's code only copied that one's.
  void final_round() {
    const Finalists f = finalists();
    const FinalRoundPlan plan = plan_final_round(costs_of(f.required), costs_of(f.optional), kConfirmRounds,
                                                 options_.budget_s - seconds_since_start());
    std::vector<std::size_t> chosen = f.required;
    chosen.insert(chosen.end(), f.optional.begin(), f.optional.begin() + plan.optional);
    if (plan.rounds == 0 || chosen.size() < 2) return;  // the default alone, or no time left
    if (plan.rounds < kConfirmRounds || static_cast<std::size_t>(plan.optional) < f.optional.size())
      logging::info("tune: the budget left holds a final round of " + std::to_string(plan.optional) + " of " +
                    std::to_string(f.optional.size()) + " candidates in " + std::to_string(plan.rounds) +
                    " rounds for routine '" + name_ + "'");
    std::vector<Candidate> copies;
    for (std::size_t i : chosen) copies.push_back(measured_[i].first);
    std::vector<double> ms;
    try {
      ms = bench_.confirm(copies, plan.rounds, options_.hooks);
    } catch (const UserError& e) {
      logging::warn(std::string("tune: the finalists of routine '") + name_ + "' could not be timed again (" + e.what() +
                    "); the default schedule stays");
      return;
    }
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      CandidateResult& result = report_.candidates[measured_[chosen[k]].second];
      result.ms = ms[k];
      result.final_round = true;
    }
  }

  /// The fastest candidate of the final round when it beats the default there by kMinWin, else
  /// the default (also when there was no final round). Sets the report's times, all of them
  /// taken in the same round.
  Candidate winner() const {
    const auto& reference = measured_.front();
    const std::pair<Candidate, std::size_t>* best = &reference;
    for (const auto& m : measured_)
      if (result_of(m).final_round && less_ms(result_of(m), result_of(*best))) best = &m;
    // Within the noise of the machine the default stays: a winner must beat it clearly.
    if (result_of(*best).ms > result_of(reference).ms * (1.0 - kMinWin)) best = &reference;
    report_.winner = result_of(*best);
    report_.default_ms = result_of(reference).ms;
    report_.tuned_ms = result_of(*best).ms;
    const auto baseline = baseline_code();
    report_.baseline_ms = baseline ? result_of(measured_[*baseline]).ms : 0;
    return best->first;
  }
};

runtime::CompileOptions compile_options(const ir::Target& target, const schedule::ScheduleTrace& trace,
                                        bool materialize_all) {
  return {.schedule = runtime::ScheduleChoice::replay(trace), .target = target, .materialize_all = materialize_all};
}

/// The width of the search `options` ask for (complete: not yet known, not compared).
SearchWidth asked_width(const TuneOptions& options) {
  return {true, options.budget_s, options.rounds, options.beam_width, options.sweep_target};
}

/// "cut short by autotune_budget_s=0, 2 rounds of beam 2, target sweeps"
std::string describe_width(const SearchWidth& w) {
  char budget[64];
  std::snprintf(budget, sizeof budget, "%g", w.budget_s);
  return std::string(w.complete ? "" : "cut short by ") + "autotune_budget_s=" + budget + ", " +
         std::to_string(w.rounds) + " rounds of beam " + std::to_string(w.beam_width) +
         (w.sweep_target ? ", target sweeps" : ", no target sweeps");
}

/// The cached winner compiled into `ctx`, or nullopt (a miss, an entry of a narrower search than
/// `options` ask for, or an entry that no longer applies).
std::optional<runtime::Routine> replay_cached(runtime::Context& ctx, const ir::Comp& comp, const std::string& name,
                                              const std::filesystem::path& dir, const TuneOptions& options,
                                              TuneReport& report) {
  auto entry = load_cached_schedule(dir, report.cache_key, ctx.backend().target());
  if (!entry) return std::nullopt;
  if (!entry->search.covers(asked_width(options))) {
    logging::info("the cached schedule of routine '" + name + "' came from a narrower search (" +
                  describe_width(entry->search) + ") than the one asked for; searching again");
    return std::nullopt;
  }
  try {
    runtime::Routine routine =
        ctx.compile(comp, name, compile_options(entry->target, entry->trace, entry->materialize_all));
    report.outcome = TuneReport::Outcome::CacheReplay;
    report.winner = {entry->label, describe_target(entry->target), schedule::print_trace(entry->trace),
                     Verdict::Measured, entry->tuned_ms, ""};
    report.baseline_ms = entry->baseline_ms;
    report.default_ms = entry->default_ms;
    report.tuned_ms = entry->tuned_ms;
    return routine;
  } catch (const ScheduleError& e) {
    logging::warn("schedule cache entry " + cached_schedule_path(dir, report.cache_key).string() +
                  " does not apply to routine '" + name + "' (" + e.what() + "); tuning again");
    return std::nullopt;
  }
}

}  // namespace

TuneOptions TuneOptions::from_config() {
  TuneOptions o;
  o.beam_width = static_cast<int>(config::get_int_in("autotune_beam_width", 0, 64));
  o.rounds = static_cast<int>(config::get_int_in("autotune_rounds", 0, 64));
  o.repeats = static_cast<int>(config::get_int_in("autotune_repeats", 1, 10000));
  o.budget_s = config::get_double("autotune_budget_s");
  if (!(o.budget_s >= 0) || !std::isfinite(o.budget_s))
    throw ConfigError("config key 'autotune_budget_s' = '" + config::get("autotune_budget_s") + "' (from " +
                      config::source_of("autotune_budget_s") + "): expected a finite number of seconds >= 0");
  o.compile_batch = static_cast<int>(config::get_int_in("autotune_compile_batch", 0, 256));
  o.log = config::get_bool("autotune_log");
  o.use_cache = config::get_bool("autotune_cache");
  o.search_placements = config::get_bool("autotune_placements");
  const std::string dir = config::get("autotune_cache_dir");
  if (!dir.empty()) o.cache_dir = dir;
  return o;
}

runtime::Routine tune(runtime::Context& ctx, const ir::Comp& comp, const std::string& name, const TuneOptions& options,
                      TuneReport* report_out) {
  TuneReport local;
  TuneReport& report = report_out != nullptr ? *report_out : local;
  report = TuneReport{};
  report.routine = name;
  if (ctx.backend_name() != "cc" && !ctx.backend().target().workgroups) {
    // Only the cc backend's and the GPU backends' default schedules are made of transforms the
    // search can vary (the interpreter runs every routine as written).
    report.outcome = TuneReport::Outcome::NotTunable;
    return ctx.compile(comp, name);
  }
  const ir::LoweredRoutine optimized = ctx.optimized_routine(comp, name);
  // The search's shape is part of the key: a placement search may pick what a plain one cannot.
  const ir::Target target = ctx.backend().target();
  report.cache_key = schedule_cache_key(schedule::program_digest(optimized), target,
                                        ctx.backend().fingerprint() + (options.search_placements ? "\nplacements" : ""),
                                        this_machine(target));
  std::filesystem::path dir;
  if (options.use_cache) {
    dir = options.cache_dir.empty() ? schedule_cache_dir() : options.cache_dir;
    if (auto routine = replay_cached(ctx, comp, name, dir, options, report)) return *routine;
  }

  report.outcome = TuneReport::Outcome::Searched;
  const Candidate best = Search(ctx, comp, name, options, optimized, report).run();
  runtime::Routine routine = ctx.compile(comp, name, compile_options(best.target, best.trace, best.materialize_all));
  if (options.log) append_tune_log(report);
  if (options.use_cache) {
    try {
      SearchWidth width = asked_width(options);
      width.complete = !report.out_of_budget;
      store_cached_schedule(dir, {report.cache_key, best.label, best.target, best.trace, best.materialize_all,
                                  report.baseline_ms, report.default_ms, report.tuned_ms, width});
    } catch (const IoError& e) {
      logging::warn(std::string("the schedule cache could not keep routine '") + name + "''s winner: " + e.what());
    }
  }
  return routine;
}

}  // namespace cannl::tune
