// bench_cannl: the cannl cell of the cross-framework benchmark suite. Reads a fixture written by
// benchmarks/scripts/gen_fixtures.py (refusing one whose digest is not in DIGESTS.txt), runs the
// workload with the measurement protocol of runners/harness.py and prints one JSON result row
// (appended to --out when given). With --check-against, the parity steps' losses are compared
// with a reference row (PyTorch eager on the CPU) and the exit status says whether they agree
// (max relative difference <= --tolerance, and the loss moves): the CI check without Python.
// With --profile, the top kernels (config key profile_kernels) are printed on stderr.
//
//   bench_cannl --fixture fixtures/mlp_small.safetensors --out results.jsonl
//   bench_cannl --fixture ci/mlp_small.safetensors --check-against ci/mlp_small.reference.json
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>

#include "bench_census.h"
#include "bench_harness.h"
#include "cannl/backends/backend.h"
#include "cannl/backends/cc_backend.h"
#include "cannl/support/process.h"
#include "bench_models.h"
#include "cannl/runtime/kernel_profile.h"
#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace {

using namespace cannl;

/// The parity gate of f32 workloads (benchmarks/orchestrate.py TOLERANCE).
constexpr double kF32Tolerance = 2e-3;

struct Args {
  std::string fixture, digests, out, backend = "cc", variant = "default", check_against;
  std::optional<std::int64_t> parity, warmup, timed;
  std::optional<double> tolerance;  // default: the workload's parity_tolerance, else 2e-3 (f32)
  bool profile = false;
  bool tune = false;
  bool fresh_build_files = false;
  bool warm_probe = false;  // internal: the second run of add_warm_compile
  bool skip_unavailable = false;  // exit 77 (a skipped test) when the backend does not open here
  std::optional<std::int64_t> census_units;  // --census: the device's multiprocessors
};

/// The exit status of --skip-unavailable when the backend does not open (ctest's SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_cannl: " << problem << "\n"
            << "usage: bench_cannl --fixture F [--digests DIGESTS.txt] [--out results.jsonl]\n"
            << "         [--backend cc|interpreter|gpu-emulator|cuda|cuda-cpu|hip|opencl] [--variant NAME] [--parity-steps N]\n"
            << "         [--warmup-steps N] [--timed-steps N] [--check-against ROW.json]\n"
            << "         [--tolerance X] [--profile] [--tune] [--fresh-build-files] [--census UNITS]\n"
            << "  --tolerance: the parity gate's max relative loss difference (default: the\n"
            << "             workload's parity_tolerance, else 2e-3, the f32 gate)\n"
            << "  --profile: time each kernel (config key profile_kernels) and print the top 10 of\n"
            << "             the timed steps on stderr\n"
            << "  --tune: compile the step with the tuner (autotune_* config keys, e.g.\n"
            << "          CANNL_AUTOTUNE_BUDGET_S); the row gets tune_outcome and tune_search_s\n"
            << "  --fresh-build-files: compile into an empty build_files/ folder (removed at exit),\n"
            << "          so that compile_s is a cold compile\n"
            << "  --skip-unavailable: exit 77 (a skipped test) when the backend does not open here\n"
            << "  --census UNITS: run nothing; print the step's kernels under the default GPU schedule\n"
            << "          on a CUDA-like device of UNITS multiprocessors (132: an H200), heaviest\n"
            << "          first by their static load, and those that starve the device\n";
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--tune") {
      a.tune = true;
      continue;
    }
    if (flag == "--profile") {
      a.profile = true;
      continue;
    }
    if (flag == "--fresh-build-files") {
      a.fresh_build_files = true;
      continue;
    }
    if (flag == "--warm-probe") {
      a.warm_probe = true;
      continue;
    }
    if (flag == "--skip-unavailable") {
      a.skip_unavailable = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing a value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--fixture") a.fixture = value;
    else if (flag == "--digests") a.digests = value;
    else if (flag == "--out") a.out = value;
    else if (flag == "--backend") a.backend = value;
    else if (flag == "--variant") a.variant = value;
    else if (flag == "--parity-steps") a.parity = std::stoll(value);
    else if (flag == "--warmup-steps") a.warmup = std::stoll(value);
    else if (flag == "--timed-steps") a.timed = std::stoll(value);
    else if (flag == "--check-against") a.check_against = value;
    else if (flag == "--tolerance") a.tolerance = std::stod(value);
    else if (flag == "--census") a.census_units = std::stoll(value);
    else usage("unknown flag " + flag);
  }
  if (a.fixture.empty()) usage("--fixture is required");
  if (a.backend != "cc" && a.backend != "interpreter" && a.backend != "gpu-emulator" && a.backend != "cuda" &&
      a.backend != "cuda-cpu" && a.backend != "hip" && a.backend != "opencl")
    usage("--backend must be cc, interpreter, gpu-emulator, cuda, cuda-cpu, hip or opencl");
  if (a.digests.empty())
    a.digests = (std::filesystem::path(a.fixture).parent_path() / "DIGESTS.txt").string();
  return a;
}

bench::StepCounts step_counts(const bench::Workload& w, const Args& a) {
  return {a.parity.value_or(w.integer("parity_steps")), a.warmup.value_or(w.integer("warmup_steps")),
          a.timed.value_or(w.integer("timed_steps"))};
}

void add_measurement(std::map<std::string, std::string>& row, const bench::Workload& w,
                     const bench::StepCounts& steps, const bench::Measurement& m) {
  row["compile_s"] = bench::json_number(m.compile_s);
  row["losses"] = bench::json_numbers(m.losses);
  row["step_p10_ms"] = bench::json_number(m.p10_ms);
  row["step_p50_ms"] = bench::json_number(m.p50_ms);
  row["step_p90_ms"] = bench::json_number(m.p90_ms);
  row["queued_step_ms"] = m.queued_ms ? bench::json_number(*m.queued_ms) : "null";
  row["steps"] = bench::json_row({{"parity", std::to_string(steps.parity)},
                                  {"warmup", std::to_string(steps.warmup)},
                                  {"timed", std::to_string(steps.timed)}});
  row["tokens_per_s"] = "null";
  if (w.text("model") == "gpt")
    row["tokens_per_s"] = bench::json_number(static_cast<double>(w.integer("batch") * w.integer("seq")) /
                                             (m.p50_ms / 1e3));
}

/// The "losses" array of a JSON result row (the reference cell's).
std::vector<double> reference_losses(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read the reference row " + path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto key = s.find("\"losses\"");
  const auto open = s.find('[', key == std::string::npos ? s.size() : key);
  if (key == std::string::npos || open == std::string::npos)
    throw FormatError("reference row " + path + " has no \"losses\" array");
  const auto close = s.find(']', open);
  std::istringstream values(s.substr(open + 1, close - open - 1));
  std::vector<double> out;
  std::string item;
  while (std::getline(values, item, ',')) out.push_back(std::stod(item));
  return out;
}

/// The parity gate of the orchestrator, for CI: "" when the losses agree, else the reason.
std::string parity_failure(const std::vector<double>& got, const std::vector<double>& want,
                           double tolerance) {
  if (got.size() != want.size() || got.empty())
    return "expected " + std::to_string(want.size()) + " losses, got " + std::to_string(got.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return "loss " + std::to_string(i) + " is not finite";
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1e-12));
  }
  const double moved = std::abs(got.back() - got.front()) / std::max(std::abs(got.front()), 1e-12);
  if (moved < 1e-6) return "loss stationary";
  if (worst > tolerance) {
    char text[96];
    std::snprintf(text, sizeof text, "max relative difference %.3g > %.3g", worst, tolerance);
    return text;
  }
  std::cerr << "bench_cannl: parity PASS (max relative difference " << worst << ")\n";
  return "";
}

/// CPU seconds of the finished child processes (the C compiler's) so far.
double children_cpu_s() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// The warm compile: this program run again (`--warm-probe`) on the same build_files/ folder,
/// which compiles the workload and runs step 0 with everything in the compile cache. A second
/// compile in this process would not do: node numbers, which the generated files mention, run on.
void add_warm_compile(std::map<std::string, std::string>& row, const Args& args, const std::string& prefix) {
  std::vector<std::string> argv{std::filesystem::read_symlink("/proc/self/exe").string(), "--fixture", args.fixture,
                                "--digests", args.digests, "--backend", args.backend, "--warm-probe"};
  if (args.profile) argv.push_back("--profile");
  if (args.tune) argv.push_back("--tune");
  if (!prefix.empty()) ::setenv("CANNL_BUILD_FILES_PREFIX", prefix.c_str(), 1);
  const process::Captured probe = process::capture(argv);
  if (!probe.result.started || probe.result.exit_status != 0) {
    row["warm_compile_s"] = "null";
    return;
  }
  // The probe prints one line: {"warm_cc_invocations": N, "warm_compile_s": S}.
  for (const std::string key : {"warm_compile_s", "warm_cc_invocations"}) {
    const auto at = probe.output.find("\"" + key + "\": ");
    if (at == std::string::npos) continue;
    const auto begin = at + key.size() + 4;
    row[key] = probe.output.substr(begin, probe.output.find_first_of(",}", begin) - begin);
  }
}

/// The warm probe's run: compile and step 0, timed, and the compiler processes they ran.
int warm_probe(bench::BenchCell& cell) {
  const int invocations = backends::cc::compiler_invocations();
  const auto start = std::chrono::steady_clock::now();
  cell.compile();
  cell.step(0);
  cell.loss();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << bench::json_row({{"warm_compile_s", bench::json_number(seconds)},
                                {"warm_cc_invocations", std::to_string(backends::cc::compiler_invocations() - invocations)}})
            << "\n";
  return 0;
}

/// The top kernels of the timed steps (and the queued ones after them), on stderr: stdout
/// carries only the JSON row.
// --census: the step compiled on the interpreter (nothing runs), its optimized routine scheduled
// for the GPU device; the census on stdout.
int print_census(const bench::Workload& w, const io::SafetensorsFile& file, std::int64_t units) {
  if (units < 1) throw RuntimeUsageError("--census needs a positive number of multiprocessors");
  bench::BenchCell cell(w, file, runtime::Context::interpreter());
  cell.keep_optimized_routine();
  cell.compile();
  std::cout << "bench_cannl: census of " << w.text("name") << " on a CUDA-like device of " << units
            << " multiprocessors\n" << bench::gpu_census(*cell.optimized_routine(), units);
  return 0;
}

void print_profile(const runtime::Context& ctx) {
  const std::vector<runtime::KernelProfileRow> rows = ctx.kernel_profile();
  std::cerr << "bench_cannl: top kernels of " << rows.size() << " (total, mean per call, share of "
            << "the routine's wall time):\n"
            << runtime::kernel_profile_summary(rows, 10);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  std::map<std::string, std::string> row{
      {"framework", bench::json_string("cannl")},
      {"backend", bench::json_string(args.backend)},
      {"variant", bench::json_string(args.variant)},
      {"fixture", bench::json_string(std::filesystem::path(args.fixture).filename().string())},
      {"workload", bench::json_string(std::filesystem::path(args.fixture).stem().string())}};
  std::vector<double> losses;
  double tolerance = args.tolerance.value_or(kF32Tolerance);
  // Before the context exists: routines compiled from here on carry the timing table.
  if (args.profile) config::set_override("profile_kernels", "true");
  // A folder of its own under build_files/: nothing cached from earlier runs.
  const std::string fresh = "bench_cannl-fresh-" + std::to_string(getpid());
  if (args.fresh_build_files) config::set_override("build_files_prefix", fresh);
  try {
    row["fixture_sha256"] = bench::json_string(bench::checked_fixture_digest(args.fixture, args.digests));
    auto file = io::SafetensorsFile::open(args.fixture);
    const auto meta = file.metadata().find("workload");
    if (meta == file.metadata().end())
      throw FormatError("fixture " + args.fixture + " has no \"workload\" metadata");
    const bench::Workload w = bench::parse_workload(meta->second);
    row["workload"] = bench::json_string(w.text("name"));
    row["precision"] = bench::json_string(std::string(bench::workload_precision(w).name()));
    row["optimizer"] = bench::json_string(w.text_or("optimizer", "sgd"));
    if (!args.tolerance) tolerance = w.number_or("parity_tolerance", kF32Tolerance);
    const bench::StepCounts steps = step_counts(w, args);
    if (args.census_units) return print_census(w, file, *args.census_units);
    bench::BenchCell cell(w, file, runtime::Context(backends::make_backend(args.backend)), args.tune);
    if (args.warm_probe) return warm_probe(cell);
    // The profile leaves out the parity and warm-up steps (the first pays for the thread pool).
    const std::int64_t first_timed = std::max<std::int64_t>(steps.parity, 1) + steps.warmup;
    const int invocations = backends::cc::compiler_invocations();
    const double cpu = children_cpu_s();
    // Progress on stderr (stdout carries only the row): where a cell stopped by its cap was.
    const auto started = std::chrono::steady_clock::now();
    const bench::Measurement m = bench::measure(
        steps,
        [&] {
          cell.compile();
          std::cerr << "bench_cannl: compiled in "
                    << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s\n";
        },
        [&](std::int64_t k) {
          if (args.profile && k == first_timed) runtime::Context(cell.context()).reset_kernel_profile();
          if (k > 0 && k <= first_timed)
            std::cerr << "bench_cannl: step " << k << " at "
                      << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s\n";
          cell.step(k);
        },
        [&] { return cell.loss(); });
    add_measurement(row, w, steps, m);
    // Compiler processes and their CPU time over the whole run (the compile probe runs them all).
    row["cc_invocations"] = std::to_string(backends::cc::compiler_invocations() - invocations);
    row["compile_cpu_s"] = bench::json_number(children_cpu_s() - cpu);
    if (args.backend == "cc") add_warm_compile(row, args, args.fresh_build_files ? fresh : "");
    if (const auto& report = cell.tune_report()) {
      // compile_s includes the search; a replay from the schedule cache searches 0 s.
      row["tune_outcome"] = bench::json_string(report->outcome == tune::TuneReport::Outcome::CacheReplay ? "cache"
                                               : report->outcome == tune::TuneReport::Outcome::Searched ? "searched"
                                                                                                        : "not tunable");
      row["tune_search_s"] = bench::json_number(report->search_s);
      row["tune_winner"] = bench::json_string(report->winner.label);
      std::cerr << tune::format_report(*report);
    }
    if (args.profile) print_profile(cell.context());
    losses = m.losses;
    row["status"] = bench::json_string("ok");
  } catch (const BackendUnavailable& e) {
    if (args.skip_unavailable) {
      std::cout << "bench_cannl: SKIP: the " << args.backend << " backend does not open here: " << e.what() << "\n";
      return kSkipped;
    }
    row["status"] = bench::json_string("error");
    row["reason"] = bench::json_string(e.what());
  } catch (const std::exception& e) {
    row["status"] = bench::json_string("error");
    row["reason"] = bench::json_string(e.what());
  }
  if (args.fresh_build_files) {
    std::error_code ignored;
    std::filesystem::remove_all(std::filesystem::current_path() / "build_files" / fresh, ignored);
  }
  const std::string line = bench::json_row(row);
  std::cout << line << "\n";
  if (!args.out.empty()) std::ofstream(args.out, std::ios::app) << line << "\n";
  if (row["status"] != bench::json_string("ok")) return 1;
  if (args.check_against.empty()) return 0;
  const std::string failure = parity_failure(losses, reference_losses(args.check_against), tolerance);
  if (failure.empty()) return 0;
  std::cerr << "bench_cannl: parity FAIL: " << failure << "\n";
  return 1;
}
