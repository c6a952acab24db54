#pragma once
// The command line of `cannl`: one table-driven parser for every command.
//
// Each command declares its options as a table (name, type, range, help). The parser accepts
// `--name value` and `--name=value` alike, checks types and ranges with messages that name the
// option, rejects unknown options (naming the closest known one), prints `--help` from the same
// table, and separates config keys: an argument `--key=value` / `--key value` whose name is no
// option of the command but a config key (docs/config.md) sets that key. A command's own option
// always wins over a config key of the same name (`cannl gpt2 --seed 8` is the sampling seed,
// however it is spelled), so one spelling never means two things.
//
// A parser of our own rather than a library: the options are few and fixed, the config-key
// fallback and the error texts are ours, and none of the packaged C++ parsers (CLI11, cxxopts,
// boost::program_options) offers that fallback without wrapping it anyway.
//
//   const CommandSpec demo{"demo", "train an MLP", {{.name = "epochs", .kind = OptionKind::Int,
//                          .min = 1, .max = 100000, .value_name = "N", .help = "epochs"}}};
//   ParsedArgs a = parse_command(demo, {"--epochs=5"});   a.integer("epochs", 40) == 5

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cannl::app {

enum class OptionKind { Flag, Int, Number, Text, Choice };

struct OptionSpec {
  std::string name;  // spelled --name on the command line
  OptionKind kind = OptionKind::Flag;
  std::string value_name;  // in the help: --epochs N
  std::string help;
  std::int64_t min = std::numeric_limits<std::int64_t>::min();  // Int: inclusive range
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
  double min_number = -std::numeric_limits<double>::max();  // Number: inclusive, finite
  double max_number = std::numeric_limits<double>::max();
  bool exclusive_min = false;        // Number: > min_number rather than >=
  std::vector<std::string> choices;  // Choice
};

struct CommandSpec {
  std::string name;     // "demo", "bench matmul"
  std::string summary;  // one line
  std::vector<OptionSpec> options;
  std::string positional_usage;  // e.g. "SPEC SHAPE..."; empty: none accepted
  std::size_t min_positional = 0;
  std::size_t max_positional = 0;
  std::string notes;  // extra help text, printed last
};

/// The parsed command line of one command. Values are stored as given and were checked against
/// the table already; the typed getters return them or the default.
class ParsedArgs {
 public:
  bool help = false;  // --help or -h: print help_text and exit 0
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> config_flags;  // (key, value) in order

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  bool flag(const std::string& name) const { return has(name); }
  std::int64_t integer(const std::string& name, std::int64_t fallback) const;
  double number(const std::string& name, double fallback) const;
  std::string text(const std::string& name, const std::string& fallback = "") const;
  std::optional<std::string> maybe_text(const std::string& name) const;

  void set(const std::string& name, std::string value) { values_[name] = std::move(value); }

 private:
  std::map<std::string, std::string> values_;
};

/// Parses `args` (after the command words) against `spec`; throws RuntimeUsageError naming the
/// option and what is wrong ("--epochs must be between 1 and 100000, got 0"; "unknown option
/// '--tune' for 'cannl bench matmul'; did you mean '--n'?").
ParsedArgs parse_command(const CommandSpec& spec, const std::vector<std::string>& args);

/// `--help` of a command: usage line, summary, one line per option, config-key note.
std::string help_text(const CommandSpec& spec);

/// Sets the parsed config keys as command-line flags of the config system (source "flag --key").
/// Throws ConfigError for a malformed value only when the key is read, like every config source.
void apply_config_flags(const ParsedArgs& args);

/// Parses `text` as a base-10 int64 in [min, max] for `what` ("--tokens"), or throws
/// RuntimeUsageError "--tokens expects an integer, got 'x'" / "... between a and b".
std::int64_t parse_integer(const std::string& text, const std::string& what, std::int64_t min,
                           std::int64_t max);

}  // namespace cannl::app
