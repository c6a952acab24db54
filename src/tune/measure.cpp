// The tuner's judge of one candidate (see measure.h).
#include "tune/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "cannl/schedule/trace.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"
#include "tune/target_fields.h"

namespace cannl::tune {

namespace {

/// Outputs whose rounding may differ (licensed re-association) agree when every value is within
/// this fraction of the node's largest reference magnitude; NaN only where the reference has one.
constexpr double kRelativeTolerance = 1e-3;
/// Timed runs are added until they take about this long together, up to kMaxRuns.
constexpr double kTopUpMs = 25;
constexpr int kMaxRuns = 64;
/// A candidate whose warm run takes this many times the best median is not timed further.
constexpr double kHopeless = 4;
/// What a first run may spend on first touches (loading the library, faulting pages in) at most:
/// a first run further above the hopeless line than this is hopeless warm too, and is not run
/// again (a serial baseline of a large matmul runs for seconds).
constexpr double kFirstRunOverheadMs = 50;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// One run's time on the clock, in ms.
double timed_run(const std::function<void()>& run) {
  const auto t0 = std::chrono::steady_clock::now();
  run();
  return ms_since(t0);
}

std::int64_t element_count(const ir::TensorNode& node) {
  std::int64_t n = 1;
  for (auto d : node.logical_dims()) n *= d;
  return n;
}

/// Pseudo-random values in [-0.1, 0.1) for an input nobody initialized (the parameters of a
/// training step compiled before its init ran), fixed by its position among the routine's inputs
/// (integers truncate them to 0). Small, like initialized weights: a step repeated on large ones
/// diverges to inf and NaN, whose timings are not those of training.
std::vector<double> made_up_values(const ir::TensorNode& node, std::size_t position) {
  std::mt19937_64 gen(0x9e3779b97f4a7c15ULL ^ position);
  std::uniform_real_distribution<double> dist(-0.1, 0.1);
  std::vector<double> out(static_cast<std::size_t>(element_count(node)));
  for (auto& v : out) v = dist(gen);
  return out;
}

}  // namespace

Bench::Bench(runtime::Context pristine, const ir::Comp& comp, std::string name, int repeats)
    : pristine_(std::move(pristine)), comp_(comp), name_(std::move(name)), repeats_(std::max(1, repeats)),
      tolerant_(config::get_bool(reassociation_licence_key(target()))) {}

void Bench::fill_inputs(runtime::Context& twin, const runtime::Routine& routine) {
  const auto& inputs = routine.inputs();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const ir::NodeRef& node = inputs[k];
    if (twin.is_initialized(node)) continue;
    auto it = made_up_inputs_.find(node->id);
    if (it == made_up_inputs_.end()) it = made_up_inputs_.emplace(node->id, made_up_values(*node, k)).first;
    twin.set_values(node, it->second);
  }
}

void Bench::keep_reference(runtime::Context& twin, const runtime::Routine& routine) {
  for (const auto& node : routine.outputs()) {
    reference_bytes_[node->id] = twin.get_bytes(node);
    if (tolerant_) reference_values_[node->id] = twin.get_values(node);
  }
}

std::string Bench::compare_outputs(runtime::Context& twin, const runtime::Routine& routine) const {
  // Every node the default schedule's routine leaves in a buffer; another placement may store
  // more (materialize-all), which nobody reads back.
  std::map<int, ir::NodeRef> outputs;
  for (const auto& node : routine.outputs()) outputs[node->id] = node;
  for (const auto& [id, want_bytes] : reference_bytes_) {
    const auto it = outputs.find(id);
    if (it == outputs.end()) return "it does not write node id " + std::to_string(id) + ", which the default schedule writes";
    const ir::NodeRef& node = it->second;
    if (twin.get_bytes(node) == want_bytes) continue;
    if (!tolerant_) return "node '" + node->debug_name() + "' differs from the default schedule's bits (no re-association is licensed)";
    const std::vector<double>& want = reference_values_.at(id);
    const std::vector<double> got = twin.get_values(node);
    double scale = 0;
    for (double v : want)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    for (std::size_t i = 0; i < want.size(); ++i) {
      const bool same_nan = std::isnan(want[i]) && std::isnan(got[i]);
      const bool same_inf = std::isinf(want[i]) && want[i] == got[i];
      if (same_nan || same_inf || std::abs(got[i] - want[i]) <= kRelativeTolerance * scale) continue;
      return "node '" + node->debug_name() + "' cell " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", the default schedule's " + std::to_string(want[i]) + " (beyond the tolerance of re-association)";
    }
  }
  return "";
}

double tuner_seconds(const TuneHooks& hooks) {
  if (hooks.clock_s) return hooks.clock_s();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool beyond_hope(double ms, double best_ms) { return ms > kHopeless * best_ms; }

int Bench::runs_for(double warm_ms) const {
  // Short routines get more runs: a median of a few sub-millisecond runs on a shared machine is
  // mostly noise.
  if (!(warm_ms > 0)) return repeats_;
  return std::max(repeats_, static_cast<int>(std::min<double>(kMaxRuns, kTopUpMs / warm_ms)));
}

double Bench::time_ms(const Candidate& c, const std::function<void()>& run, double first_run_ms, double best_ms,
                      const TuneHooks& hooks) const {
  if (hooks.measure) return hooks.measure(c, run);
  // A first run pays for first touches (the library just loaded, pages faulted in, cold caches),
  // so it never decides alone: when it looks hopeless a warm run is taken and judged instead.
  if (first_run_ms > kHopeless * best_ms + kFirstRunOverheadMs) return first_run_ms;
  double warm_ms = first_run_ms;
  if (beyond_hope(warm_ms, best_ms)) {
    warm_ms = timed_run(run);
    // Far slower than the best even warm (a serial baseline of a large matmul): it cannot win,
    // and timing it again would spend the budget.
    if (beyond_hope(warm_ms, best_ms)) return warm_ms;
  }
  std::vector<double> ms;
  for (int r = runs_for(warm_ms); r > 0; --r) ms.push_back(timed_run(run));
  return median(ms);
}

Bench::Instance Bench::instantiate(const Candidate& c) {
  Instance in{pristine_.twin(), {}, 0};
  in.routine = in.twin.compile(comp_, name_,
                               {.schedule = runtime::ScheduleChoice::replay(c.trace), .target = c.target,
                                .materialize_all = c.materialize_all});
  fill_inputs(in.twin, in.routine);
  return in;
}

void Bench::prebuild(const std::vector<Candidate>& cs) {
  std::vector<runtime::CompileOptions> options;
  for (const auto& c : cs)
    options.push_back({.schedule = runtime::ScheduleChoice::replay(c.trace), .target = c.target,
                       .materialize_all = c.materialize_all});
  pristine_.prebuild(comp_, name_, options);
}

std::string Bench::code_of(const Candidate& c, const runtime::Routine& routine) {
  // The kernel library's blocking is code too: the routine calls it by name only.
  const ir::GemmShape& g = c.target.gemm;
  return routine.source() + "\nkernel library " + std::to_string(c.target.vector_bytes) + " " + std::to_string(g.mr) +
         " " + std::to_string(g.nv) + " " + std::to_string(g.kc) + " " + std::to_string(g.nc) + " " +
         std::to_string(g.mc);
}

void Bench::Instance::run() {
  // The first run (the checked one) takes static indices 0, so every candidate computes the same
  // iteration; later runs step through their ranges as a training loop steps through batches.
  std::vector<std::int64_t> statics;
  for (const auto& s : routine.statics()) statics.push_back(s.range > 0 ? runs % s.range : 0);
  ++runs;
  twin.run(routine, statics);
  twin.synchronize();  // a device with a queue has finished when the clock stops
}

CandidateResult Bench::judge(const Candidate& c, bool reference, double best_ms, const TuneHooks& hooks) {
  CandidateResult result{c.label, describe_target(c.target), schedule::print_trace(c.trace), Verdict::Measured, 0, "", "", false};
  try {
    Instance in = instantiate(c);
    // Another candidate may have printed the same code (a threshold no tile is near, a team
    // the routine does not use): it gets that one's time rather than a second, noisy one.
    const std::string code = code_of(c, in.routine);
    if (const auto same = timed_code_.find(code); same != timed_code_.end() && !reference) {
      result.ms = same->second.second;
      result.same_code_as = same->second.first;
      result.why = "the same code as '" + same->second.first + "'";
      return result;
    }
    auto run = [&] {
      if (hooks.before_run) hooks.before_run(c, in.runs);
      in.run();
    };
    const double first_run_ms = timed_run(run);  // the check run (static indices 0)
    if (hooks.after_check_run) hooks.after_check_run(c, in.twin, in.routine);
    if (reference) {
      keep_reference(in.twin, in.routine);
    } else if (std::string diff = compare_outputs(in.twin, in.routine); !diff.empty()) {
      result.verdict = Verdict::WrongResult;
      result.why = diff;
      return result;
    }
    const double timing_started = tuner_seconds(hooks);
    result.ms = time_ms(c, run, first_run_ms, best_ms, hooks);
    result.timing_s = tuner_seconds(hooks) - timing_started;
    timed_code_.try_emplace(code, c.label, result.ms);
  } catch (const UserError& e) {
    if (reference) throw;  // the program's own error: ctx.compile would throw it too
    result.verdict = Verdict::Failed;
    result.why = std::string(e.kind()) + ": " + e.what();
  } catch (const InternalError& e) {
    if (reference) throw;
    result.verdict = Verdict::Failed;
    result.why = std::string("InternalError: ") + e.what();
  }
  return result;
}

std::vector<double> Bench::confirm(const std::vector<Candidate>& finalists, int rounds, const TuneHooks& hooks) {
  if (finalists.empty()) return {};
  const auto& hook = hooks.measure_final ? hooks.measure_final : hooks.measure;
  std::vector<Instance> instances;
  std::vector<double> warm_ms;
  for (const auto& c : finalists) {
    instances.push_back(instantiate(c));
    warm_ms.push_back(timed_run([&] { instances.back().run(); }));  // warm up: not judged
  }
  const double fastest = *std::min_element(warm_ms.begin(), warm_ms.end());
  std::vector<int> runs;
  for (double ms : warm_ms) runs.push_back(beyond_hope(ms, fastest) ? 1 : runs_for(ms));
  // Rounds over the finalists in turn, so a burst of load elsewhere on the machine falls on all
  // of them rather than on one.
  std::vector<std::vector<double>> medians(finalists.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t f = 0; f < instances.size(); ++f) {
      auto run = [&in = instances[f]] { in.run(); };
      if (hook) {
        medians[f].push_back(hook(finalists[f], run));
        continue;
      }
      std::vector<double> ms;
      for (int k = 0; k < runs[f]; ++k) ms.push_back(timed_run(run));
      medians[f].push_back(median(ms));
    }
  std::vector<double> out;
  for (auto& m : medians) out.push_back(median(m));
  return out;
}

}  // namespace cannl::tune
