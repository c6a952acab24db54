#pragma once
// The cannl runner's side of the cross-framework benchmark protocol (semantics-backend.md 10.1),
// the same protocol as runners/harness.py: fixture digest check, the step schedule, percentiles
// and the JSON result row.
//
//   Workload w = parse_workload(file.metadata().at("workload"));
//   Measurement m = measure(w, steps, [&] { compile(); }, [&](std::int64_t k) { run(k); },
//                           [&] { return read_loss(); });

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cannl::bench {

/// A workload definition (benchmarks/workloads/*.json) as stored in the fixture's metadata: a
/// flat JSON object of numbers, booleans (as 1 / 0), strings and arrays of numbers.
///   parse_workload(R"({"name": "mlp_small", "dims": [2, 64]})").ints("dims") == {2, 64}
struct Workload {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
  std::map<std::string, std::vector<double>> arrays;

  const std::string& text(const std::string& key) const;
  double number(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  std::vector<std::int64_t> ints(const std::string& key) const;
  /// An optional field, or `fallback` when the workload does not set it.
  std::string text_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;
};
Workload parse_workload(const std::string& json);

/// The fixture's sha256 after checking it against `digests` (DIGESTS.txt lines
/// "<sha256>  <size>  <file name>"); throws FormatError when the file is not listed or differs.
///   std::string sha = checked_fixture_digest("mlp_small.safetensors", "DIGESTS.txt");
std::string checked_fixture_digest(const std::filesystem::path& fixture,
                                   const std::filesystem::path& digests);

/// Step counts, from the workload unless overridden on the command line.
struct StepCounts {
  std::int64_t parity = 0, warmup = 0, timed = 0;
};

struct Measurement {
  double compile_s = 0;
  std::vector<double> losses;
  double p10_ms = 0, p50_ms = 0, p90_ms = 0;
  std::optional<double> queued_ms;
};

/// Runs the protocol: compile() then step 0 and sync() (compile_s), the parity steps (losses),
/// warmup steps, `timed` steps each followed by sync() (percentiles), `timed` more steps and one
/// sync() (queued_ms). step(k) runs step k; sync() waits for the device and returns the loss.
Measurement measure(const StepCounts& steps, const std::function<void()>& compile,
                    const std::function<void(std::int64_t)>& step,
                    const std::function<double()>& sync);

/// Percentile by linear interpolation between closest ranks of sorted values (numpy's default).
///   percentile({1, 2, 3, 4}, 0.5) == 2.5
double percentile(const std::vector<double>& sorted, double q);

/// One JSON line: fields as given (already JSON-encoded values), keys sorted.
///   json_row({{"framework", json_string("cannl")}, {"compile_s", json_number(0.5)}})
std::string json_row(const std::map<std::string, std::string>& fields);
std::string json_string(const std::string& s);
/// A number, or null when not finite.
std::string json_number(double x);
std::string json_numbers(const std::vector<double>& xs);

}  // namespace cannl::bench
