#pragma once
// Configuration: `cannl_config` file (working directory or an ancestor) < `CANNL_<KEY>` environment
// variables < `--<key>=<value>` command-line flags < programmatic overrides. Every key is declared
// in src/support/config_keys.def with its default and documented in docs/config.md; unknown keys
// warn with the closest known key; bad values throw ConfigError naming key, value and source.
//
//   int level = config::get_int("debug");          // CANNL_DEBUG=2 -> 2
//   config::set_override("cc_compiler", "clang");  // tests

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cannl::config {

/// One declared key (a row of src/support/config_keys.def).
///   for (const KeyInfo& key : known_keys()) std::cout << key.name << " = " << key.default_value;
struct KeyInfo {
  std::string_view name;           // lowercase with underscores: "cc_compiler"
  std::string_view default_value;  // "" means unset
  std::string_view description;    // one line, as in docs/config.md
};

/// Every known key, in documentation order.
///   known_keys().front().name == "debug"
std::span<const KeyInfo> known_keys();

/// The resolved value of a known key (default if unset anywhere). Keys may be spelled with dashes
/// or a `cannl_` prefix. Throws ConfigError for an unknown key (naming the closest known key) and
/// when the cannl_config file is malformed (naming file and line).
///   config::get("backend") == "cc"
std::string get(std::string_view key);
/// get() parsed as a boolean: true/false, 1/0, yes/no, on/off, any case; otherwise ConfigError
/// "config key 'X' = 'Y' (from <source>): expected a boolean (true/false); ...".
///   if (config::get_bool("cc_cache")) ...
bool get_bool(std::string_view key);
/// get() parsed as a decimal 64-bit integer (leading '+' or '-' allowed); otherwise ConfigError
/// naming key, value and source.   config::get_int("seed") == 42
std::int64_t get_int(std::string_view key);
/// get_int() within [min, max] (inclusive); otherwise ConfigError naming key, value, source and the
/// range. For every key a narrower type reads: a silently truncated 4294967298 threads is 2.
///   int threads = static_cast<int>(config::get_int_in("cc_threads", 0, 4096));
std::int64_t get_int_in(std::string_view key, std::int64_t min, std::int64_t max);
/// get() parsed as a floating-point number (strtod syntax); otherwise ConfigError naming key,
/// value and source.   config::get_double("seed") == 42.0
double get_double(std::string_view key);
/// get() when it is one of `choices` (case and surrounding blanks ignored), returned as the choice
/// is spelled; otherwise ConfigError "config key 'X' = 'Y' (from <source>): expected a, b or c".
///   const std::string mode = config::get_one_of("gpu_graphs", {"auto", "off"});  // "OFF" -> "off"
std::string get_one_of(std::string_view key, std::initializer_list<std::string_view> choices);
namespace detail {
std::string get_one_of(std::string_view key, std::span<const std::string_view> choices);
}  // namespace detail
/// get_one_of() over the names of `choices`, returning the value paired with the name.
///   auto order = config::get_one_of<Order>("cuda_cpu_thread_order",
///                                          {{"forward", Order::Forward}, {"reverse", Order::Reverse}});
template <typename T>
T get_one_of(std::string_view key, std::initializer_list<std::pair<std::string_view, T>> choices);

/// Where the value came from: "default", "file <path>:<line>", "environment CANNL_X",
/// "flag --x", "override".   config::source_of("debug") == "environment CANNL_DEBUG"
std::string source_of(std::string_view key);

/// Consumes `--<key>=<value>` flags for known keys (dashes or underscores) and returns the other
/// arguments unchanged, in order, argv[0] included. Unknown `--x=y` flags warn (with the closest
/// key) and are left for the program; `--x` without `=` and everything after `--` are left alone.
///
///   // argv = {"app", "--cc-compiler=clang", "in.txt"}  ->  returns {"app", "in.txt"}
std::vector<std::string> parse_command_line(int argc, const char* const* argv);
/// Forgets every value parse_command_line consumed (for tests).   config::clear_command_line();
void clear_command_line();

/// Highest-priority value, for tests and programs; empty value removes the override. Throws
/// ConfigError for an unknown key.   config::set_override("cc_compiler", "clang");
void set_override(std::string_view key, std::string_view value);
/// Removes every set_override value.   config::clear_overrides();
void clear_overrides();
/// Forgets the cached file/environment reading (after chdir or setenv in tests); they are read
/// again, lazily, on the next get. Flags and overrides are kept.
///   ::setenv("CANNL_DEBUG", "2", 1); config::reload(); config::get_int("debug") == 2
void reload();

template <typename T>
T get_one_of(std::string_view key, std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::vector<std::string_view> names;
  names.reserve(choices.size());
  for (const auto& choice : choices) names.push_back(choice.first);
  const std::string chosen = detail::get_one_of(key, names);
  for (const auto& choice : choices) {
    if (choice.first == chosen) return choice.second;
  }
  return choices.begin()->second;  // not reached: get_one_of returned one of the names
}

}  // namespace cannl::config
