#pragma once
// Configuration: `cannl_config` file (working directory or an ancestor) < `CANNL_<KEY>` environment
// variables < `--<key>=<value>` command-line flags < programmatic overrides. Every key is declared
// in src/support/config_keys.def with its default and documented in docs/config.md; unknown keys
// warn with the closest known key; bad values throw ConfigError naming key, value and source.
//
//   int level = config::get_int("debug");          // CANNL_DEBUG=2 -> 2
//   config::set_override("cc_compiler", "clang");  // tests

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cannl::config {

struct KeyInfo {
  std::string_view name;
  std::string_view default_value;
  std::string_view description;
};

/// Every known key, in documentation order.
std::span<const KeyInfo> known_keys();

/// The resolved value of a known key (default if unset anywhere). Throws ConfigError for an
/// unknown key (a programming error in cannl would be InternalError; callers pass literals).
std::string get(std::string_view key);
bool get_bool(std::string_view key);           // true/false/1/0/yes/no/on/off
std::int64_t get_int(std::string_view key);
double get_double(std::string_view key);
/// Where the value came from: "default", "file <path>:<line>", "environment CANNL_X", "flag --x".
std::string source_of(std::string_view key);

/// Consumes `--<key>=<value>` flags for known keys (dashes or underscores) and returns the other
/// arguments unchanged, in order. Unknown `--` flags that look like keys are left for the program.
std::vector<std::string> parse_command_line(int argc, const char* const* argv);

/// Highest-priority value, for tests and programs; empty value removes the override.
void set_override(std::string_view key, std::string_view value);
void clear_overrides();
/// Forget the cached file/environment reading (after chdir or setenv in tests).
void reload();

}  // namespace cannl::config
