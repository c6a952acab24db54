#pragma once
// Host-side helpers shared by the real-data examples: command-line options, a seeded generator,
// reading data files with a clear error, and the loss of logits computed on the host (so every
// model of an example is measured by the same code, whatever it was trained with).
//
//   ExampleArgs args = parse_example_args(config::parse_command_line(argc, argv));
//   SplitMix64 rng(42);  rng.shuffle(items);
//   double nll = mean_nll(logits, targets, vocab);

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cannl/support/config.h"
#include "cannl/support/error.h"

namespace examples {

/// A missing or unreadable data set: the message says what to install or pass. main() prints it.
class DataUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The options every example accepts.
struct ExampleArgs {
  /// --quick: the short form CTest runs.
  bool quick = false;
  /// --data-dir DIR: the project's data/ folder (the default works from the project root).
  std::string data_dir = "data";
  /// --epochs N: overrides the example's number of epochs (0: its default).
  int epochs = 0;
  /// --dataset-dir DIR: where a system data set lies (empty: its Debian package's folder).
  std::string dataset_dir;
};

/// Reads --quick, --data-dir DIR, --epochs N and --dataset-dir DIR from the arguments left by
/// cannl::config::parse_command_line (which consumes config flags such as --seed=7). Anything
/// else, a missing value or an --epochs that is not a number from 1 to 100000 is a
/// cannl::RuntimeUsageError naming the argument.
inline ExampleArgs parse_example_args(const std::vector<std::string>& argv) {
  ExampleArgs args;
  auto value = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= argv.size()) throw cannl::RuntimeUsageError(argv[i] + " needs a value");
    return argv[++i];
  };
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "--quick") {
      args.quick = true;
    } else if (argv[i] == "--data-dir") {
      args.data_dir = value(i);
    } else if (argv[i] == "--dataset-dir") {
      args.dataset_dir = value(i);
    } else if (argv[i] == "--epochs") {
      const std::string& text = value(i);
      int epochs = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), epochs);
      if (error != std::errc() || end != text.data() + text.size() || epochs < 1 || epochs > 100000)
        throw cannl::RuntimeUsageError("--epochs expects a number from 1 to 100000, got '" + text + "'");
      args.epochs = epochs;
    } else {
      throw cannl::RuntimeUsageError("unknown argument '" + argv[i] +
                                     "' (the examples take --quick, --epochs N, --data-dir DIR, "
                                     "--dataset-dir DIR and config keys as --key=value)");
    }
  }
  return args;
}

/// The short form checks that an example works, not how fast its code runs: its generated C is
/// compiled with -O1 (about half the compile time of -O3, the same numbers since floating-point
/// contraction stays off) unless the user chose a level.
inline void use_quick_compile_settings() {
  if (cannl::config::source_of("cc_optimization_level") == "default")
    cannl::config::set_override("cc_optimization_level", "1");
}

/// splitmix64 (Steele, Lea & Flood 2014): the same stream on every platform, unlike the
/// distributions of <random>, so splits and samples are reproducible everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n) (the modulo bias is below 2^-40 for the sizes used here).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  /// Fisher-Yates shuffle.
  template <class T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::uint64_t state_;
};

/// Index drawn with probability proportional to exp(logits[i] / temperature).
inline std::size_t sample_from_logits(const double* logits, std::size_t n, SplitMix64& rng,
                                      double temperature = 1.0) {
  double top = logits[0];
  for (std::size_t i = 1; i < n; ++i) top = std::max(top, logits[i]);
  std::vector<double> weights(n);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i)
    total += weights[i] = std::exp((logits[i] - top) / temperature);
  double pick = rng.uniform() * total;
  for (std::size_t i = 0; i < n; ++i)
    if ((pick -= weights[i]) < 0) return i;
  return n - 1;  // rounding left a sliver past the end
}

/// -log softmax(row)[target] of one row of logits, computed stably.
inline double row_nll(const double* row, std::size_t n, std::size_t target) {
  double top = row[0];
  for (std::size_t i = 1; i < n; ++i) top = std::max(top, row[i]);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::exp(row[i] - top);
  return top + std::log(sum) - row[target];
}

/// Mean negative log-likelihood of rows of `vocab` logits; rows whose weight is 0 are skipped
/// (padding). `weights` may be empty (every row counts).
inline double mean_nll(const std::vector<double>& logits, const std::vector<std::int64_t>& targets,
                       std::size_t vocab, const std::vector<double>& weights = {}) {
  double total = 0, count = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    if (!weights.empty() && weights[r] == 0) continue;
    total += row_nll(&logits[r * vocab], vocab, static_cast<std::size_t>(targets[r]));
    count += 1;
  }
  return total / count;
}

/// The whole file as a string; DataUnavailable naming the file and `hint` when it cannot be read.
inline std::string read_file(const std::string& path, const std::string& hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataUnavailable("cannot read '" + path + "': " + hint);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

/// CTest's SKIP_RETURN_CODE: the quick form of an example whose data is not installed skips.
constexpr int kSkipped = 77;

/// Runs an example's body and turns its failures into an exit status: missing data skips the
/// quick form (the CI machine may lack the Debian package) and fails the full run; any other
/// error (cannl's UserError carries what / where / how) is printed and fails.
template <class Body>
int run_example(const char* name, const ExampleArgs& args, Body body) {
  try {
    return body(args);
  } catch (const DataUnavailable& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    if (args.quick) std::fprintf(stderr, "%s: skipped\n", name);
    return args.quick ? kSkipped : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

/// main() of an example: parses the arguments (a usage error is printed and fails) and runs
/// `body` through run_example.
template <class Body>
int example_main(const char* name, int argc, char** argv, Body body) {
  ExampleArgs args;
  try {
    args = parse_example_args(cannl::config::parse_command_line(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
  return run_example(name, args, body);
}

}  // namespace examples
